"""A definition with its line span, and the innermost-scope lookup shared by the
tree-sitter path and the regex fallback."""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Definition:
    """A named definition spanning ``start_line..end_line`` (1-based, inclusive)."""

    name: str
    qualified_name: str
    kind: str
    line: int
    start_line: int
    end_line: int


def innermost(defs: list[Definition], lines: Iterable[int]) -> dict[int, Definition]:
    """Innermost definition covering each line, by one sweep over spans sorted by start
    (spans are properly nested, as in any syntax tree or indentation outline)."""
    ordered = sorted(defs, key=lambda d: (d.start_line, -d.end_line))
    starts = [d.start_line for d in ordered]
    out: dict[int, Definition] = {}
    stack: list[Definition] = []
    pushed = 0
    for line in sorted({ln for ln in lines if isinstance(ln, int)}):
        upto = bisect.bisect_right(starts, line)
        while pushed < upto:
            d = ordered[pushed]
            while stack and stack[-1].end_line < d.start_line:
                stack.pop()
            stack.append(d)
            pushed += 1
        while stack and stack[-1].end_line < line:
            stack.pop()
        # The stack is a chain of nested spans, so its top is the innermost one open.
        if stack:
            out[line] = stack[-1]
    return out
