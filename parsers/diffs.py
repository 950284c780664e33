"""Unified / ``git diff`` parsing that tolerates diffs embedded in other text
(tool results, markdown ```diff blocks), hand-written hunks without line
counts, and ``--- a/x`` / ``+++ b/x`` pairs without a ``diff --git`` line.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from parsers.languages import is_code_path, language_for_path
from parsers.resolve import HunkLines, resolve_hunk
from parsers.scan import strip_ansi
from parsers.symbols import definitions
from parsers.types import DiffFile, Hunk

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(?: ?(.*))?$")
_HUNK_LOOSE = re.compile(r"^@@(?!@)(?:[^@]*)@@(?: ?(.*))?$|^@@\s*$")
_MAX_LINES = 200_000
# Symbol resolution parses each hunk; past this many (vendored trees, generated
# files) files keep their hunks and counts but not their symbols.
_MAX_RESOLVED_HUNKS = 2_000


@dataclass(slots=True)
class _FileBuilder:
    old_path: str | None = None
    new_path: str | None = None
    is_new: bool = False
    is_deleted: bool = False
    has_minus_plus: bool = False
    hunks: list[HunkLines] = field(default_factory=list)


def _unquote(path: str) -> str:
    """git quotes paths with unusual bytes as C strings with octal escapes."""
    if len(path) >= 2 and path[0] == path[-1] == '"':
        raw = path[1:-1].encode("utf-8", errors="replace")
        try:
            return codecs.escape_decode(raw)[0].decode("utf-8", errors="replace")
        except (ValueError, UnicodeError):
            return path[1:-1]
    return path


def strip_prefix(path: str) -> str:
    """Drop git's ``a/``/``b/`` prefixes and a leading ``./``."""
    if path.startswith(("a/", "b/")) and len(path) > 2:
        return path[2:]
    return path[2:] if path.startswith("./") else path


def _header_path(rest: str) -> str | None:
    """Path from a ``---``/``+++`` line: tab-separated timestamps cut, /dev/null is None."""
    rest = rest.split("\t", 1)[0].rstrip("\r")
    if rest.endswith('"') and rest.startswith('"'):
        rest = _unquote(rest)
    else:
        rest = re.sub(r"\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?(?: [+-]\d{4})?$", "", rest)
        rest = rest.rstrip()
    if not rest or rest == "/dev/null":
        return None
    return strip_prefix(rest)


def _git_line_paths(rest: str) -> tuple[str | None, str | None]:
    """Paths from ``diff --git a/x b/y``; with spaces in names, prefer the split
    where both sides agree (the common no-rename case)."""
    rest = rest.strip()
    if rest.startswith('"'):
        m = re.match(r'^("(?:[^"\\]|\\.)*")\s+(.*)$', rest)
        if m:
            return strip_prefix(_unquote(m.group(1))), strip_prefix(_unquote(m.group(2)))
    splits = [m.start() for m in re.finditer(r" b/", rest)]
    for pos in splits:
        a, b = rest[:pos], rest[pos + 1:]
        if strip_prefix(a) == strip_prefix(b):
            return strip_prefix(a), strip_prefix(b)
    if splits:
        return strip_prefix(rest[: splits[0]]), strip_prefix(_unquote(rest[splits[0] + 1:]))
    parts = rest.split(" ")
    if len(parts) == 2:
        return strip_prefix(parts[0]), strip_prefix(parts[1])
    return None, None


def _parse_hunk(lines: list[str], i: int, old_start: int, old_len: int | None, new_start: int,
                new_len: int | None, header: str) -> tuple[HunkLines, int]:
    """Consume a hunk body starting at ``lines[i]``; returns it and the next index.

    With counts, the counts bound the body (an empty line is a blank context line
    whose space was stripped). Without counts, consume while lines look like diff."""
    greedy = old_len is None or new_len is None
    old_left = old_len or 0
    new_left = new_len or 0
    hunk = HunkLines(old_start, new_start, header, old_len=old_len, new_len=new_len)
    old_no, new_no = old_start, new_start
    n = len(lines)
    while i < n:
        line = lines[i]
        if not greedy and old_left <= 0 and new_left <= 0:
            break
        if line.startswith("\\"):
            i += 1
            continue
        tag = line[:1]
        if greedy and (line.startswith(("@@", "diff --git ")) or (
                line.startswith("--- ") and i + 1 < n and lines[i + 1].startswith("+++ "))):
            break
        if tag == "" and greedy:
            nxt = lines[i + 1][:1] if i + 1 < n else ""
            if nxt not in (" ", "+", "-"):
                break
            tag = " "
        elif tag == "":
            tag = " "
        if tag == " ":
            if not greedy and (old_left <= 0 or new_left <= 0):
                break
            hunk.context(old_no, new_no, line[1:])
            old_no, new_no, old_left, new_left = old_no + 1, new_no + 1, old_left - 1, new_left - 1
        elif tag == "+":
            if not greedy and new_left <= 0:
                break
            hunk.add(new_no, line[1:])
            new_no, new_left = new_no + 1, new_left - 1
        elif tag == "-":
            if not greedy and old_left <= 0:
                break
            hunk.remove(old_no, new_no, line[1:])
            old_no, old_left = old_no + 1, old_left - 1
        else:
            break
        i += 1
    return hunk, i


def _build(b: _FileBuilder, new_sources: Mapping[str, str] | None, resolve: bool
           ) -> DiffFile | None:
    path = b.new_path if b.new_path is not None and not b.is_deleted else b.old_path
    path = path or b.new_path
    if not path:
        return None
    language = language_for_path(path)
    source = None
    if isinstance(new_sources, Mapping) and not b.is_deleted:
        for key in (path, "b/" + path, "./" + path):
            value = new_sources.get(key)
            if isinstance(value, str):
                source = value
                break
    code = resolve and is_code_path(path)
    defs = definitions(source, language) if code and source is not None and b.hunks else None
    hunks: list[Hunk] = []
    for h in b.hunks:
        symbols = resolve_hunk(h, language, defs) if code else []
        hunks.append(Hunk(
            old_start=h.old_start, old_len=h.old_count if h.old_len is None else h.old_len,
            new_start=h.new_start, new_len=h.new_count if h.new_len is None else h.new_len,
            header=h.header,
            added=[t for _, t in h.added], removed=[t for _, _, t in h.removed], symbols=symbols,
            body=h.body, located=h.old_len is not None and h.new_len is not None,
        ))
    old_path = b.old_path if b.old_path and b.new_path and b.old_path != b.new_path else None
    return DiffFile(
        path=path, old_path=old_path, language=language, hunks=hunks,
        symbols=[s for h in hunks for s in h.symbols],
        added=sum(len(h.added) for h in hunks), removed=sum(len(h.removed) for h in hunks),
        is_new=b.is_new or (b.old_path is None and b.has_minus_plus),
        is_deleted=b.is_deleted or (b.new_path is None and b.has_minus_plus),
    )


def _scan(lines: list[str]) -> list[_FileBuilder]:
    files: list[_FileBuilder] = []
    cur: _FileBuilder | None = None
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if line.startswith("diff --git "):
            cur = _FileBuilder(*_git_line_paths(line[11:]))
            files.append(cur)
        elif line.startswith("--- ") and i + 1 < n and lines[i + 1].startswith("+++ "):
            if cur is None or cur.hunks or cur.has_minus_plus:
                cur = _FileBuilder()
                files.append(cur)
            cur.old_path, cur.new_path = _header_path(line[4:]), _header_path(lines[i + 1][4:])
            cur.has_minus_plus = True
            i += 2
            continue
        elif cur is not None and not cur.hunks and _file_meta(cur, line):
            pass
        elif line.startswith("@@") and not line.startswith("@@@") and cur is not None:
            m = _HUNK.match(line)
            if m:
                old_len = int(m.group(2)) if m.group(2) is not None else 1
                new_len = int(m.group(4)) if m.group(4) is not None else 1
                hunk, i = _parse_hunk(lines, i + 1, int(m.group(1)), old_len, int(m.group(3)),
                                      new_len, (m.group(5) or "").strip())
                cur.hunks.append(hunk)
                continue
            loose = _HUNK_LOOSE.match(line)
            if loose:
                header = (loose.group(1) or "").strip()
                hunk, i = _parse_hunk(lines, i + 1, 1, None, 1, None, header)
                cur.hunks.append(hunk)
                continue
        i += 1
    return files


def _file_meta(cur: _FileBuilder, line: str) -> bool:
    """Apply an extended git header line (mode, rename, copy, binary) to ``cur``."""
    if line.startswith("new file mode"):
        cur.is_new = True
    elif line.startswith("deleted file mode"):
        cur.is_deleted = True
    elif line.startswith(("rename from ", "copy from ")):
        cur.old_path = _unquote(line.split(" ", 2)[2].strip())
    elif line.startswith(("rename to ", "copy to ")):
        cur.new_path = _unquote(line.split(" ", 2)[2].strip())
    elif line.startswith("Binary files ") and line.rstrip().endswith(" differ"):
        if " and /dev/null differ" in line:
            cur.is_deleted = True
        elif line.startswith("Binary files /dev/null and "):
            cur.is_new = True
    else:
        return False
    return True


def parse_diff(
    diff_text: str, new_sources: Mapping[str, str] | None = None, *, resolve_symbols: bool = True
) -> list[DiffFile]:
    """Every file of every diff found in ``diff_text``, hunks resolved to enclosing
    symbols (through ``new_sources[path]`` when given, else from the hunk itself) unless
    ``resolve_symbols`` is False (a reader that wants only the hunks skips the parsing)."""
    if not isinstance(diff_text, str) or ("@@" not in diff_text and "diff --git" not in diff_text):
        return []
    text = strip_ansi(diff_text)
    lines = [ln[:-1] if ln.endswith("\r") else ln for ln in text.split("\n", _MAX_LINES)]
    out: list[DiffFile] = []
    hunks = 0
    for builder in _scan(lines[:_MAX_LINES]):
        hunks += len(builder.hunks)
        built = _build(builder, new_sources, resolve=resolve_symbols and hunks <= _MAX_RESOLVED_HUNKS)
        if built is not None:
            out.append(built)
    return out
