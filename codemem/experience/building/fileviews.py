"""What the session has seen of each file: lines shown by reads (numbered tool output, ``cat``),
kept current through the edits the agent made, so an edit's lines and enclosing symbols can
be located the way the agent saw the file.

Symbol lookup parses only a window: from the nearest top-level line above the change down to
its end, padded with blank lines so line numbers hold. A top-level line bounds every scope
that encloses the change, so the answer equals a whole-file parse at a fraction of the cost.
"""

from __future__ import annotations

import re

_NUMBERED = re.compile(r"^ *(\d+)(?:→|\t)(.*)$", re.M)
_SWE_NUMBERED = re.compile(r"^(\d+):(.*)$", re.M)
_SWE_HEADER = re.compile(r"^\[File: (.+?) \(\d+ lines total\)\]", re.M)
_NOT_ANCHOR = ("#", ")", "]", "}", '"""', "'''", "//", "/*", "*", "@")
_MAX_WINDOW = 4000
_MAX_LINES = 200_000


def numbered_lines(text: str) -> list[tuple[int, str]]:
    """``(line number, text)`` pairs of ``cat -n`` / Claude Code ``N→`` / SWE-agent ``N:`` output;
    empty when the text is not mostly numbered lines."""
    pairs = [(int(n), t) for n, t in _NUMBERED.findall(text)]
    if not pairs:
        pairs = [(int(n), t) for n, t in _SWE_NUMBERED.findall(text)]
    if not pairs or len(pairs) * 2 < text.count("\n") + 1 - 2:
        return []
    return pairs


def swe_open_file(text: str) -> str | None:
    """The file a SWE-agent ``open`` observation shows."""
    m = _SWE_HEADER.search(text[:2000])
    return m.group(1) if m else None


class FileView:
    """Known lines of one file (1-based; ``None`` where unseen)."""

    __slots__ = ("lines",)

    def __init__(self) -> None:
        self.lines: list[str | None] = []

    def fill(self, start: int, texts: list[str]) -> None:
        """Record ``texts`` as lines ``start``, ``start+1``, ..."""
        if start < 1 or start + len(texts) > _MAX_LINES:
            return
        end = start - 1 + len(texts)
        if end > len(self.lines):
            self.lines.extend([None] * (end - len(self.lines)))
        self.lines[start - 1 : end] = texts

    def fill_numbered(self, pairs: list[tuple[int, str]]) -> None:
        for number, text in pairs:
            if 1 <= number <= _MAX_LINES:
                if number > len(self.lines):
                    self.lines.extend([None] * (number - len(self.lines)))
                self.lines[number - 1] = text

    def set_content(self, content: str) -> None:
        self.lines = list(content.split("\n")) if content else []

    def _block(self, start: int, count: int) -> str | None:
        chunk = self.lines[start : start + count]
        if len(chunk) < count or any(line is None for line in chunk):
            return None
        return "\n".join(chunk)  # type: ignore[arg-type]

    def locate(self, old: str) -> tuple[int, int] | None:
        """0-based line index where ``old`` starts and its character offset in that line."""
        old_lines = old.split("\n")
        count = len(old_lines)
        k = next((j for j, text in enumerate(old_lines) if text.strip()), None)
        if k is None:
            return None
        key = old_lines[k]
        for i, line in enumerate(self.lines):
            if line is None or key not in line:
                continue
            if count == 1:
                return i, line.index(key)
            top = i - k
            if top < 0:
                continue
            if k == 0:
                if not line.endswith(key):
                    continue
            elif k < count - 1:
                if line != key:
                    continue
            elif not line.startswith(key):
                continue
            head = self.lines[top]
            if head is None or not head.endswith(old_lines[0]):
                continue
            block = self._block(top, count)
            offset = len(head) - len(old_lines[0])
            if block is not None and block.startswith(old, offset):
                return top, offset
        return None

    def replace(self, old: str, new: str) -> tuple[int, int] | None:
        """Apply an old -> new string edit; the 1-based line range ``new`` now spans."""
        if not old:
            return None
        found = self.locate(old)
        if found is None:
            return None
        index, offset = found
        count = old.count("\n") + 1
        block = self._block(index, count)
        if block is None:
            return None
        replaced = block[:offset] + new + block[offset + len(old) :]
        new_lines = replaced.split("\n")
        self.lines[index : index + count] = new_lines
        first = index + 1 + block[:offset].count("\n")
        return first, first + new.count("\n")

    def replace_range(self, start: int, end: int, new: str) -> tuple[int, int]:
        """Replace lines ``start..end`` (1-based, inclusive) as SWE-agent ``edit`` does."""
        new_lines = new.split("\n") if new else []
        if end > len(self.lines):
            self.lines.extend([None] * (end - len(self.lines)))
        self.lines[start - 1 : end] = new_lines
        return start, start + max(len(new_lines) - 1, 0)

    def find_new(self, new: str) -> tuple[int, int] | None:
        """Where text already in the file (an edit's result) sits; 1-based range."""
        if not new.strip():
            return None
        found = self.locate(new)
        if found is None:
            return None
        first = found[0] + 1
        return first, first + new.count("\n")

    def _anchor(self, line: int) -> int | None:
        """0-based index of the nearest top-level line at or above ``line``."""
        floor = max(line - _MAX_WINDOW, 0)
        for i in range(min(line, len(self.lines)) - 1, floor - 1, -1):
            text = self.lines[i]
            if text is None:
                return None
            if text and not text[0].isspace() and not text.startswith(_NOT_ANCHOR):
                return i
        return 0 if floor == 0 and line <= len(self.lines) else None

    def _close(self, end: int) -> int:
        """Where a window ending at line ``end`` may stop: the next top-level line or gap, so
        the enclosing definition is parsed whole rather than cut mid-statement."""
        limit = min(len(self.lines), end + _MAX_WINDOW)
        for i in range(end, limit):
            text = self.lines[i]
            if text is None or (
                text and not text[0].isspace() and not text.startswith(_NOT_ANCHOR)
            ):
                return i
        return limit

    def window_source(self, spans: list[tuple[int, int]]) -> str | None:
        """Source holding the windows that enclose each 1-based ``(start, end)`` span, blanks
        elsewhere; None unless every span's enclosing window is known."""
        keep: list[tuple[int, int]] = []
        for start, end in spans:
            anchor = self._anchor(start)
            if anchor is None:
                return None  # a source missing a span's scope would resolve it wrongly
            keep.append((anchor, self._close(end)))
        if not keep:
            return None
        last = max(end for _, end in keep)
        out = [""] * last
        for anchor, end in keep:
            for i in range(anchor, end):
                text = self.lines[i]
                out[i] = text if text is not None else ""
        return "\n".join(out)
