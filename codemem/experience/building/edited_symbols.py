"""Which functions and classes an edit touched.

With the file seen (``FileView``), the enclosing definitions of the edited lines come from
a tree-sitter parse of the window above them; the final patch's hunks are resolved the same
way once the view is confirmed to agree with the patch's new side. Without the file, the
edit is rendered as a hunk (with the nearest definition line above as git's header) and
``parsers.parse_diff`` resolves it from the fragment alone.

Edit-time work is only capturing the window (``SymbolQuery``); parsing waits until the
builder knows which edits count, so scratch files cost nothing.
"""

from __future__ import annotations

import re

import msgspec

import parsers
from codemem.experience.building.diff_text import edit_hunk
from codemem.experience.building.fileviews import FileView

_DEF_LINE = re.compile(r"^(\s*)(?:async\s+def|def|class|func|fn|function)\s+\w")
_MAX_CREATED_SYMBOLS = 12


class SymbolQuery(msgspec.Struct, frozen=True):
    """What is needed to name an edit's symbols later: the file's window when known."""

    path: str
    old: str
    new: str
    lines: tuple[int, int] | None = None
    source: str | None = None  # blank-padded window enclosing ``lines``
    header: str = ""  # nearest definition line above, git-style
    created: bool = False


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(i for i in items if i))


def _header_above(view: FileView | None, line: int) -> str:
    """Git-style hunk header: the nearest definition line above ``line`` in the view."""
    if view is None:
        return ""
    for i in range(min(line, len(view.lines)) - 2, max(line - 2000, 0) - 1, -1):
        text = view.lines[i]
        if text is None:
            return ""
        if _DEF_LINE.match(text):
            return text.strip()
    return ""


def symbol_query(
    path: str,
    view: FileView | None,
    lines: tuple[int, int] | None,
    old: str,
    new: str,
    created: bool,
    header: str = "",
) -> SymbolQuery | None:
    """Capture an edit's context while the view still shows the file as the edit left it."""
    if parsers.language_for_path(path) is None:
        return None
    if created:
        return SymbolQuery(path, "", new, created=True)
    source = view.window_source([lines]) if view is not None and lines is not None else None
    if source is None and lines is not None:
        header = _header_above(view, lines[0]) or header
    return SymbolQuery(path, old, new, lines, source, header)


def resolve_symbols(query: SymbolQuery | None) -> list[str]:
    """Qualified names the edit touched, in line order."""
    if query is None:
        return []
    language = parsers.language_for_path(query.path)
    if language is None:
        return []
    if query.created:
        defs = [
            s.qualified_name
            for s in parsers.extract_symbols(query.new, language)
            if s.kind != "call"
        ]
        return _unique(defs)[:_MAX_CREATED_SYMBOLS]
    if query.source is not None and query.lines is not None:
        found = parsers.enclosing_symbols(
            query.source, language, range(query.lines[0], query.lines[1] + 1)
        )
        return _unique([found[k] for k in sorted(found)])
    hunk = edit_hunk(
        query.path, query.old, query.new, query.lines[0] if query.lines else None, context=3
    )
    if not hunk:
        return []
    if query.header:
        hunk = hunk.replace("@@\n", f"@@ {query.header}\n", 1)
    return _unique([s for f in parsers.parse_diff(hunk) for s in f.symbols])


def _agrees(view: FileView, hunks: list[parsers.Hunk]) -> list[tuple[int, int]] | None:
    """The new-side spans of a file's hunks when the view holds every added line at its place;
    None when it does not (the view lost track of the file)."""
    spans: list[tuple[int, int]] = []
    for hunk in hunks:
        if not hunk.located:
            continue
        line = hunk.new_start
        for text in hunk.body:
            if text[0] == "+":
                if line > len(view.lines) or view.lines[line - 1] != text[1:]:
                    return None
            if text[0] != "-":
                line += 1
        spans.append((hunk.new_start, hunk.new_start + max(hunk.new_len - 1, 0)))
    return spans or None


def patch_symbols(patch: str, views: dict[str, FileView]) -> dict[str, list[str]]:
    """Symbols per file of a patch; files whose view agrees with the patch are resolved
    against the view's windows, the others from their hunks alone."""
    plain = parsers.parse_diff(patch)
    sources: dict[str, str] = {}
    for diff_file in plain:
        view = None if diff_file.is_deleted else views.get(diff_file.path)
        spans = _agrees(view, diff_file.hunks) if view is not None else None
        source = view.window_source(spans) if view is not None and spans else None
        if source is not None:
            sources[diff_file.path] = source
    if not sources:
        return {f.path: _unique(list(f.symbols)) for f in plain}
    resolved = parsers.parse_diff(patch, new_sources=sources)
    out: dict[str, list[str]] = {}
    for with_source, without in zip(resolved, plain, strict=False):
        # Per hunk, the source's answer unless it has none and the hunk alone has one.
        names = [
            s
            for h_src, h_alone in zip(with_source.hunks, without.hunks, strict=False)
            for s in (h_src.symbols or h_alone.symbols)
        ]
        out[with_source.path] = _unique(names)
    return out
