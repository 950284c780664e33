"""Cheap pre-selection of the lines a costly regex can match.

Python's ``re`` scans fast only for patterns that begin with a literal; the
reference patterns begin with character classes and lookbehinds, which are tried
at every position. A literal "hint" (``File "``, ``.go:``, ``Error``) finds the few
lines worth the full pattern, and only those are scanned with it.
"""

from __future__ import annotations

import bisect
import re
from itertools import accumulate

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def strip_ansi(text: str) -> str:
    """Drop terminal colour codes (``git diff --color``, pytest output)."""
    return _ANSI.sub("", text) if "\x1b[" in text else text


class TextIndex:
    """A text split into lines, with the offsets to map a match back to its line."""

    __slots__ = ("_starts", "lines", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.split("\n")
        self._starts = [0, *accumulate(len(line) + 1 for line in self.lines)]

    def line_numbers(self, hint: re.Pattern[str]) -> list[int]:
        """0-based indices of lines holding a match of ``hint``, ascending; each search
        resumes at the next line, so many hits on one line cost one step."""
        found: list[int] = []
        starts, text = self._starts, self.text
        pos, end = 0, len(text)
        while pos <= end:
            m = hint.search(text, pos)
            if m is None:
                break
            idx = bisect.bisect_right(starts, m.start()) - 1
            found.append(idx)
            pos = starts[idx + 1]
        return found

    def select(self, hint: re.Pattern[str], before: int = 0, after: int = 0) -> str:
        """The lines around ``hint`` matches, runs of adjacent lines kept together and
        separate runs split by a blank line (so multi-line patterns never bridge them)."""
        wanted: set[int] = set()
        n = len(self.lines)
        for idx in self.line_numbers(hint):
            wanted.update(range(max(0, idx - before), min(n, idx + after + 1)))
        if not wanted:
            return ""
        out: list[str] = []
        prev = -2
        for idx in sorted(wanted):
            if idx != prev + 1 and out:
                out.append("")
            out.append(self.lines[idx])
            prev = idx
        return "\n".join(out)


def run_start(text: str, pos: int, chars: re.Pattern[str], limit: int = 300) -> int:
    """Start of the run of ``chars`` (a ``[...]*`` pattern) that ends at ``pos``,
    found by matching the reversed preceding text: linear in the run's length."""
    m = chars.match(text[max(0, pos - limit):pos][::-1])
    return pos - (m.end() if m else 0)
