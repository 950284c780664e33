"""Data side of the replay: eval's own rendering of Claude Code transcripts into Add
messages, the labelled tasks, and the corpora (trajectory sets) of each condition.

The rendering is deliberately independent of codemem's own transcript parser: the
benchmark must show that the service copes with whatever text a platform sends, so
`--rendering` switches between variants (JSON tool calls, plain prose, no reasoning).
"""

from __future__ import annotations

import json
import re
import tarfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec

from eval._paths import SWE_LITE
from eval.replay.metrics import content_text

RENDERINGS = ("default", "plain", "noreasoning")
DEFAULT_DATA = SWE_LITE


class Message(msgspec.Struct, omit_defaults=True):
    """One Add message, as the contract sends it."""

    role: str
    content: str
    timestamp: int | None = None


@dataclass(frozen=True)
class Trajectory:
    """One past experience: a solved task's transcript, rendered."""

    instance_id: str  # also the session_id it is Added under
    repo: str
    messages: list[Message]

    @property
    def text(self) -> str:
        return "\n\n".join(m.content for m in self.messages)


@dataclass(frozen=True)
class Task:
    """A later, related task with its gold predecessors (links_dev.json)."""

    instance_id: str
    repo: str
    query: str
    gold: frozenset[str]
    files: frozenset[str] = frozenset()  # the files its own fix (the task's patch) touches


@dataclass(frozen=True)
class Condition:
    """One memory (one user_id) and the tasks searched against it."""

    user_id: str
    kind: str  # one of CONDITION_KINDS
    trajectories: tuple[str, ...]
    tasks: tuple[str, ...]


# -- rendering --------------------------------------------------------------------------------

def _unix_ms(ts: object) -> int | None:
    if not isinstance(ts, str):
        return None
    try:
        return int(datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


def _plain_tool_call(name: str, inp: dict[str, Any]) -> str:
    """A tool call as prose, without JSON: what a platform rendering for humans might send."""
    get = lambda k: str(inp.get(k, ""))  # noqa: E731
    if name == "Bash":
        return f"Ran: {get('command')}"
    if name == "Edit":
        return f"Edited {get('file_path')}: {get('old_string')} -> {get('new_string')}"
    if name == "Write":
        return f"Wrote {get('file_path')}:\n{get('content')}"
    if name == "Read":
        return f"Read {get('file_path')}"
    if name == "Grep":
        return f"Searched for {get('pattern')} in {get('path') or 'the repository'}"
    if name == "Glob":
        return f"Listed files matching {get('pattern')}"
    if name == "TodoWrite":
        todos = inp.get("todos") or []
        return "Todo list:\n" + "\n".join(
            f"- {t.get('content', '')} ({t.get('status', '')})" for t in todos if isinstance(t, dict))
    return f"Used {name}: " + "; ".join(f"{k} {v}" for k, v in inp.items())


def _render_block(block: dict[str, Any], rendering: str) -> str:
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "thinking":
        return "" if rendering == "noreasoning" else str(block.get("thinking", ""))
    if kind == "tool_use":
        name, inp = str(block.get("name", "")), block.get("input") or {}
        if rendering == "plain":
            return _plain_tool_call(name, inp if isinstance(inp, dict) else {})
        return f"Tool call {name} {json.dumps(inp, ensure_ascii=False)}"
    if kind == "tool_result":
        text = content_text(block.get("content"))
        if rendering == "plain" or not text:
            return text
        return ("Tool result (error):\n" if block.get("is_error") else "Tool result:\n") + text
    return ""


def render_event(event: object, rendering: str = "default") -> Message | None:
    """One transcript line as an Add message; None for non-message events and empty text."""
    if not isinstance(event, dict) or event.get("type") not in ("user", "assistant"):
        return None
    msg = event.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        text = "\n\n".join(p for p in (_render_block(b, rendering) for b in content if isinstance(b, dict)) if p.strip())
    else:
        return None
    if not text.strip():
        return None
    return Message(role=str(event["type"]), content=text, timestamp=_unix_ms(event.get("timestamp")))


def render_lines(lines: Iterable[bytes | str], rendering: str = "default") -> list[Message]:
    """A JSONL transcript as Add messages; lines that do not parse are skipped (one in the
    data set is truncated on purpose)."""
    if rendering not in RENDERINGS:
        raise ValueError(f"unknown rendering {rendering!r}; one of {RENDERINGS}")
    out = []
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        m = render_event(event, rendering)
        if m is not None:
            out.append(m)
    return out


# -- the data set -----------------------------------------------------------------------------

def _index(data: Path) -> dict[str, tuple[str, str]]:
    """trajectory file name -> (instance_id, repo)."""
    return {Path(r["file"]).name: (r["instance_id"], r["repo"]) for r in json.loads((data / "trajectories_index.json").read_text())}


def iter_trajectories(data: Path, rendering: str, wanted: set[str] | None = None) -> Iterator[Trajectory]:
    """Stream the tarball once, rendering only the wanted instance_ids (all when None)."""
    index = _index(data)
    with tarfile.open(data / "trajectories.tar.xz", "r|*") as archive:
        for member in archive:
            name = Path(member.name).name
            if not member.isfile() or name not in index:
                continue
            iid, repo = index[name]
            if wanted is not None and iid not in wanted:
                continue
            fh = archive.extractfile(member)
            if fh is not None:
                yield Trajectory(iid, repo, render_lines(fh, rendering))


def load_tasks(data: Path) -> list[Task]:
    queries = {}
    with open(data / "related_tasks.jsonl") as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                queries[r["instance_id"]] = (r["repo"], r["problem_statement"], patch_files(r["patch"]))
    links = json.loads((data / "links_dev.json").read_text())
    return [Task(x["related_instance_id"], *queries[x["related_instance_id"]][:2],
                 frozenset(x["experience_instance_ids"]), queries[x["related_instance_id"]][2]) for x in links]


def patch_files(patch: str) -> frozenset[str]:
    """The source files a unified diff changes (its `diff --git a/X b/X` lines), tests, docs
    and files with no extension (AUTHORS) left out, as swe-verified-reuse's `files` are."""
    paths = (m.group(1) for m in re.finditer(r"^diff --git a/(\S+) b/", patch, re.MULTILINE))
    return frozenset(p for p in paths if "." in Path(p).name and not re.search(r"(^|/)(docs?|tests?|testing)/|(^|/)test_", p))


EDIT_TOOLS = ("Edit", "MultiEdit", "Write", "NotebookEdit")


def trajectory_edits(data: Path) -> dict[str, frozenset[str]]:
    """Each trajectory's edited files, from its raw events (the `file_path` of its edit tool
    calls), independent of codemem's parser: what `useful@1` compares with a task's fix."""
    index = _index(data)
    edits: dict[str, frozenset[str]] = {}
    with tarfile.open(data / "trajectories.tar.xz", "r|*") as archive:
        for member in archive:
            name = Path(member.name).name
            if not member.isfile() or name not in index or (fh := archive.extractfile(member)) is None:
                continue
            paths: set[str] = set()
            for line in fh:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                content = (event.get("message") or {}).get("content") if isinstance(event, dict) else None
                for block in content if isinstance(content, list) else ():
                    if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("name") in EDIT_TOOLS:
                        path = (block.get("input") or {}).get("file_path") or (block.get("input") or {}).get("notebook_path")
                        if isinstance(path, str):
                            paths.add(path)
            edits[index[name][0]] = frozenset(paths)
    return edits


def same_file(edited: frozenset[str], files: frozenset[str]) -> bool:
    """Whether a trajectory's edits (absolute paths in its sandbox) touch one of `files`
    (repository paths)."""
    return any(path == f or path.endswith("/" + f) for path in edited for f in files)


def trajectory_repos(data: Path) -> dict[str, str]:
    return {iid: repo for iid, repo in _index(data).values()}


def trajectory_lines(data: Path) -> dict[str, int]:
    return {r["instance_id"]: int(r["lines"]) for r in json.loads((data / "trajectories_index.json").read_text())}


# -- conditions -------------------------------------------------------------------------------

CONDITION_KINDS = ("relevant", "noisy-repo", "noisy-all", "absent")
_ALIASES = {"repo": "noisy-repo", "all": "noisy-all"}


def parse_kinds(spec: str) -> list[str]:
    """`--conditions` value: comma-separated kinds; `repo`/`all` accepted for the noisy ones."""
    kinds = [_ALIASES.get(k.strip(), k.strip()) for k in spec.split(",") if k.strip()]
    bad = [k for k in kinds if k not in CONDITION_KINDS]
    if bad:
        raise ValueError(f"unknown condition(s) {bad}; choose from {CONDITION_KINDS}")
    return [k for k in CONDITION_KINDS if k in kinds]


def build_conditions(tasks: list[Task], repos: dict[str, str], universe: set[str], all_gold: set[str],
                     kinds: Iterable[str]) -> list[Condition]:
    """The user_ids of a run. `universe` is the memory of `all` (all 300, or the smoke set);
    `absent` removes the gold of every labelled task (`all_gold`), so nothing relevant remains
    for any of them; `repo:<r>` holds the universe's trajectories of repository r."""
    kinds = set(kinds)
    out: list[Condition] = []
    if "relevant" in kinds:
        for t in tasks:
            out.append(Condition(f"relevant:{t.instance_id}", "relevant", tuple(sorted(t.gold)), (t.instance_id,)))
    if "noisy-repo" in kinds:
        for repo in sorted({t.repo for t in tasks}):
            trajs = tuple(sorted(i for i in universe if repos[i] == repo))
            out.append(Condition(f"repo:{repo}", "noisy-repo", trajs, tuple(t.instance_id for t in tasks if t.repo == repo)))
    every = tuple(t.instance_id for t in tasks)
    if "noisy-all" in kinds:
        out.append(Condition("all", "noisy-all", tuple(sorted(universe)), every))
    if "absent" in kinds:
        out.append(Condition("absent", "absent", tuple(sorted(universe - all_gold)), every))
    return out


def smoke_selection(tasks: list[Task], repos: dict[str, str], lines: dict[str, int], all_gold: set[str],
                    n_tasks: int = 3, n_others: int = 4) -> tuple[list[Task], set[str]]:
    """A quick end-to-end set: the labelled tasks with the shortest (distinct) gold
    trajectories, and the shortest non-gold trajectories of their repositories as noise."""
    picked: list[Task] = []
    for t in sorted(tasks, key=lambda t: sum(lines.get(g, 0) for g in t.gold)):
        if len(picked) < n_tasks and not any(t.gold & p.gold for p in picked):  # distinct gold: more to tell apart
            picked.append(t)
    picked_repos = {t.repo for t in picked}
    others = sorted((i for i in repos if repos[i] in picked_repos and i not in all_gold), key=lambda i: lines.get(i, 0))
    universe = {g for t in picked for g in t.gold} | set(others[:n_others])
    return picked, universe
