"""The import graph: edges point inward only, and no module imports itself round a cycle.

    parsers  <-  codemem  <-  api, integrations  <-  cli

`parsers/` knows code, `codemem/` is the core (storage, ranking, experiences), `api/` and
`integrations/` are its edges (HTTP, MCP, the Claude Code hook), and `cli/` is the
composition root that joins them. Every import counts, whether at module level, inside a
function or under `TYPE_CHECKING`: a lazy import of an edge is still a dependency on it.

Inside the core the rooms are layered too: `contract` (the Add/Search values) needs nothing
else, `store` nothing of what builds or ranks what it keeps, `git` reads history without
storing it, and only `importers` (and the edges) call an importer.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Each package and the project packages it may import (itself included).
ALLOWED = {
    "parsers": {"parsers"},
    "codemem": {"codemem", "parsers"},
    "api": {"api", "codemem", "parsers"},
    "integrations": {"integrations", "codemem", "parsers"},
    "cli": {"cli", "api", "integrations", "codemem", "parsers"},
}
# Third-party frameworks that belong to an edge: the core serves no protocol itself.
EDGE_LIBRARIES = {"litestar", "mcp", "uvicorn", "starlette", "anyio"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for pkg in ALLOWED for p in sorted((ROOT / pkg).rglob("*.py"))}


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """Every module `name` imports: project modules resolved to the module (or package)
    they name, others by their top-level name."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                found.add(sub if sub in MODULES else module)
    return found


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _reaches(prefix: str, targets: tuple[str, ...]) -> list[str]:
    """Each edge from a module under `prefix` to a module under one of `targets`."""
    def under(m: str, p: str) -> bool:
        return m == p or m.startswith(p + ".")
    return sorted(
        f"{m} -> {d}" for m, deps in GRAPH.items() if under(m, prefix)
        for d in deps if any(under(d, t) for t in targets)
    )


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_inward(module: str) -> None:
    package = module.split(".")[0]
    outward = sorted(
        m for m in GRAPH[module]
        if m.split(".")[0] in ALLOWED and m.split(".")[0] not in ALLOWED[package]
    )
    assert not outward, f"{module} imports {outward}; {package} may import only {sorted(ALLOWED[package])}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.split(".")[0] in ("codemem", "parsers")))
def test_the_core_imports_no_edge_library(module: str) -> None:
    edge = sorted(m for m in GRAPH[module] if m.split(".")[0] in EDGE_LIBRARIES)
    assert not edge, f"{module} imports {edge}: that belongs in api/, integrations/ or cli/"


def _cycle() -> list[str] | None:
    """One import cycle among the project's modules, or None.

    A package's `__init__` importing its own submodules is not a cycle of concern when the
    submodules do not import the package back, which this search sees as any other edge."""
    edges = {m: sorted(d for d in deps if d in MODULES and d != m) for m, deps in GRAPH.items()}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for d in edges[m]:
            if state.get(d) == 1:
                return path[path.index(d):] + [d]
            if d not in state and (found := visit(d)):
                return found
        path.pop()
        state[m] = 2
        return None

    for m in sorted(edges):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_no_import_cycles() -> None:
    cycle = _cycle()
    assert cycle is None, " -> ".join(cycle or [])


def test_recognising_transcripts_needs_nothing_of_building_experiences() -> None:
    """`experience.recognising` reads raw text; `experience.building` follows a session with
    what it read. The reading side stays usable (and testable) on its own."""
    inward = sorted(
        f"{m} -> {d}" for m, deps in GRAPH.items() if m.startswith("codemem.experience.recognising")
        for d in deps if d.startswith("codemem.experience.building")
    )
    assert not inward, inward


def test_reading_git_needs_no_storage() -> None:
    """`codemem.git` reads history into experiences; storing them is the importers' job
    (`codemem.importers`), so the reading side stays usable on a repository alone."""
    storing = ("codemem.store", "codemem.memory", "codemem.writing", "codemem.importers")
    assert not _reaches("codemem.git", storing)


def test_nothing_in_the_core_depends_on_an_importer() -> None:
    """`Memory` and the ranking know no importer, so an import is one more caller of Add,
    never a path of its own."""
    core = sorted({m.split(".")[1] for m in MODULES if m.startswith("codemem.")} - {"importers"})
    assert not [edge for part in core for edge in _reaches(f"codemem.{part}", ("codemem.importers",))]


def test_the_store_knows_nothing_above_it() -> None:
    """`codemem.store` keeps rows (and reads them back for people: inventory, short ids);
    what builds, ranks, imports or schedules them sits above it."""
    above = ("codemem.memory", "codemem.experience", "codemem.git",
             "codemem.importers", "codemem.writing", "codemem.encoders", "codemem.memoryarena")
    assert not _reaches("codemem.store", above)


def test_the_searcher_writes_nothing() -> None:
    """Search and browsing (`codemem.ranking`, the searcher included) only read: the writing
    side (`codemem.writing`: Add, import, deletes, their threads) is none of theirs, so a
    Memory that only searches never needs it."""
    assert not _reaches("codemem.ranking", ("codemem.writing", "codemem.store.writer", "codemem.store.maintenance"))


def test_ranking_sees_plain_data() -> None:
    """Of the ranking, only the searcher reads the store (it plans one Search's reads); the
    rest takes plain values and gives back an order."""
    reads = sorted(f"{m} -> {d}" for m, deps in GRAPH.items()
                   if m.startswith("codemem.ranking") and m != "codemem.ranking.searcher"
                   for d in deps if d == "codemem.store" or d.startswith("codemem.store."))
    assert not reads, reads


def test_the_contract_is_the_bottom_of_the_core() -> None:
    """`codemem.contract` (the Add/Search values and their checks) is what every other part
    and every edge shares, so it needs nothing of theirs but the error hierarchy."""
    others = sorted({m for m in MODULES if m.startswith("codemem.")}
                    - {m for m in MODULES if m.startswith("codemem.contract")} - {"codemem.errors"})
    assert not _reaches("codemem.contract", tuple(others))


def test_the_graph_sees_the_known_edges() -> None:
    """A guard on the test itself: it resolves imports to the modules they name."""
    assert "codemem.memory" in GRAPH["api.app"] or "codemem.memory" in GRAPH["api.routes"]
    assert "cli.subcommands" in GRAPH["cli.main"]
    assert "parsers.paths" in GRAPH["parsers.terms"]
    assert "codemem.experience.recognising.events" in GRAPH["codemem.experience.building.tracker"]
    assert "codemem.git.records" in GRAPH["codemem.git.log"]
    assert "codemem.importers.report" in GRAPH["codemem.importers.git"]
    assert "codemem.store.short_ids" in GRAPH["codemem.ranking.searcher"]
    assert "codemem.writing.session_writer" in GRAPH["codemem.memory"]
    assert "codemem.contract.types" in GRAPH["codemem.contract.validation"]
