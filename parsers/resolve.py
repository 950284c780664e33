"""Which definitions do a hunk's changed lines belong to?

With the file's new side at hand this is a plain lookup. Without it, the hunk
is all we have: its new-side (context + added) and old-side (context + removed)
text are parsed as fragments, and git's ``@@ ... @@ header`` (the nearest
definition line above the hunk) supplies the scope the fragment starts in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from parsers.heuristics import match_definition_line, regex_definitions
from parsers.scopes import Definition, innermost
from parsers.symbols import definitions

_CONTAINERS = frozenset({"class", "interface", "scope", "enum", "module", "namespace"})


@dataclass(slots=True)
class HunkLines:
    """A hunk body as numbered lines of both sides, filled in by the diff parser."""

    old_start: int
    new_start: int
    header: str
    new_side: list[tuple[int, str]] = field(default_factory=list)
    old_side: list[tuple[int, str]] = field(default_factory=list)
    added: list[tuple[int, str]] = field(default_factory=list)
    # (old line number, new-side line number at the removal point, text)
    removed: list[tuple[int, int, str]] = field(default_factory=list)
    old_count: int = 0
    new_count: int = 0
    # The header's own counts; None for hand-written hunks that omit them.
    old_len: int | None = None
    new_len: int | None = None
    body: list[str] = field(default_factory=list)  # each line with its " ", "+" or "-" tag

    def context(self, old_no: int, new_no: int, text: str) -> None:
        self.body.append(" " + text)
        self.new_side.append((new_no, text))
        self.old_side.append((old_no, text))
        self.old_count += 1
        self.new_count += 1

    def add(self, new_no: int, text: str) -> None:
        self.body.append("+" + text)
        self.new_side.append((new_no, text))
        self.added.append((new_no, text))
        self.new_count += 1

    def remove(self, old_no: int, new_no: int, text: str) -> None:
        self.body.append("-" + text)
        self.old_side.append((old_no, text))
        self.removed.append((old_no, new_no, text))
        self.old_count += 1


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip(" \t"))


@dataclass(frozen=True, slots=True)
class _Header:
    qualified: str
    kind: str

    @property
    def is_container(self) -> bool:
        return self.kind in _CONTAINERS


def _header_scope(header: str, language: str | None) -> _Header | None:
    hit = match_definition_line(header, language)
    if hit is None:
        return None
    kind, name, owner = hit
    return _Header(f"{owner}.{name}" if owner else name, kind)


@lru_cache(maxsize=1024)
def _fragment_definitions(fragment: str, language: str | None
                          ) -> tuple[tuple[Definition, ...], tuple[Definition, ...]]:
    """tree-sitter and keyword definitions of a hunk fragment, memoised: agents show
    the same diff many times in one trajectory, and parsing is the expensive part."""
    return tuple(definitions(fragment, language)), tuple(regex_definitions(fragment, language))


def _fragment(side: list[tuple[int, str]], language: str | None, header: _Header | None,
              wanted: list[int]) -> dict[int, str]:
    """Resolve ``wanted`` line numbers within one side of a hunk parsed on its own.

    tree-sitter answers first; keyword heuristics cover lines it leaves open,
    since a fragment cut out of a class body often is not valid code on its own."""
    if not side or not wanted:
        return {}
    first = side[0][0]
    texts = [t for _, t in side]
    fragment = "\n".join(texts)
    rel = [ln - first + 1 for ln in wanted]
    parsed, keyword = _fragment_definitions(fragment, language)
    found = innermost(list(parsed), rel)
    if len(found) < len(rel):
        found = innermost(list(keyword), rel) | found
    # Python scopes are visible in indentation: a line at column 0 is outside the header.
    indent_scoped = language == "python"
    out: dict[int, str] = {}
    for ln in wanted:
        idx = ln - first
        if not 0 <= idx < len(texts):
            continue
        d: Definition | None = found.get(idx + 1)
        text = texts[idx]
        if d is not None:
            nested = not indent_scoped or _indent(texts[d.start_line - 1]) > 0
            if (header is not None and header.is_container and nested
                    and not d.qualified_name.startswith(header.qualified + ".")
                    and d.kind not in _CONTAINERS):
                out[ln] = f"{header.qualified}.{d.qualified_name}"
            else:
                out[ln] = d.qualified_name
        elif header is not None:
            if indent_scoped and text.strip() and _indent(text) == 0:
                continue
            out[ln] = header.qualified
    return out


def _changed(pairs: list[tuple[int, str]]) -> list[int]:
    """Line numbers worth attributing: blank lines only when nothing else changed."""
    solid = [ln for ln, text in pairs if text.strip()]
    return solid or [ln for ln, _ in pairs]


def _with_source(source_defs: list[Definition], old_frag: dict[int, str],
                 added_lines: list[int], removed: list[tuple[int, int]]) -> list[tuple[int, str]]:
    """Added lines by lookup in the new source; removed lines by the new-source
    definition at the removal point, unless the removed code was itself a definition."""
    anchors = set(added_lines)
    for _, new_no in removed:
        anchors.update((new_no - 1, new_no))
    found = innermost(source_defs, anchors)
    owners = innermost([d for d in source_defs if d.kind in _CONTAINERS], anchors)
    names = [(ln, found[ln].qualified_name) for ln in added_lines if ln in found]
    for old, new_no in removed:
        hit = found.get(new_no - 1) or found.get(new_no)
        anchor = hit.qualified_name if hit else None
        frag = old_frag.get(old)
        # A definition visible only on the old side was removed or renamed: the new
        # source cannot name it, the fragment can (qualified by the class around it).
        if frag and (anchor is None or frag.rsplit(".", 1)[-1] not in anchor.split(".")):
            owner = owners.get(new_no - 1) or owners.get(new_no)
            if owner is not None and not frag.startswith(owner.qualified_name + "."):
                frag = f"{owner.qualified_name}.{frag}"
            names.append((new_no, frag))
        elif anchor:
            names.append((new_no, anchor))
    return names


def _from_fragments(h: HunkLines, language: str | None, header: _Header | None,
                    old_frag: dict[int, str], added_lines: list[int],
                    removed: list[tuple[int, int, str]]) -> list[tuple[int, str]]:
    """Added lines from the new-side fragment; removed lines from the old side when
    it shows a removed definition, else from the new side at the removal point."""
    wanted = set(added_lines)
    for _, new_no, _ in removed:
        wanted.update((new_no - 1, new_no))
    new_frag = _fragment(h.new_side, language, header, sorted(wanted))
    names = [(ln, new_frag[ln]) for ln in added_lines if ln in new_frag]
    for old, new_no, text in removed:
        name = old_frag.get(old) or new_frag.get(new_no - 1) or new_frag.get(new_no)
        if name is None and header is not None and not (
                language == "python" and text.strip() and _indent(text) == 0):
            name = header.qualified
        if name:
            names.append((new_no, name))
    return names


def resolve_hunk(h: HunkLines, language: str | None, source_defs: list[Definition] | None
                 ) -> list[str]:
    """Qualified names enclosing the hunk's changed lines, in line order.

    ``source_defs`` are the definitions of the file's full new side, when known.
    The old side is parsed only when a removed line opens a definition: that is
    the one case the new side cannot name (and parsing is most of the cost)."""
    header = _header_scope(h.header, language) if h.header else None
    added_lines = _changed(h.added)
    removed_old = set(_changed([(old, text) for old, _, text in h.removed]))
    removed = [(old, new_no, text) for old, new_no, text in h.removed if old in removed_old]
    old_frag: dict[int, str] = {}
    if any(match_definition_line(text, language) for _, _, text in removed):
        old_frag = _fragment(h.old_side, language, header, [old for old, _, _ in removed])
    if source_defs is not None:
        names = _with_source(source_defs, old_frag, added_lines,
                             [(old, new_no) for old, new_no, _ in removed])
    else:
        names = _from_fragments(h, language, header, old_frag, added_lines, removed)
    names.sort(key=lambda pair: pair[0])
    return [name for _, name in names]
