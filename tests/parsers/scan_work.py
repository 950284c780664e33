"""The work the parsers' regular expressions do, counted: a deterministic stand-in for their CPU.

Every compiled pattern the `parsers` modules hold (at module level, alone or in a list or
tuple of them) is swapped for a `CountingPattern` that adds to one `Work` the calls made and
the characters each call went over: to the end of its match, or to the end of what it was
given when it found none, and all of it for the calls that run to the end (`finditer`,
`findall`, `sub`, `split`). A scan that starts again from the top, or once per line, shows as
characters that grow faster than the text does, whatever the load on the machine. What it
cannot see is a single match attempt that backtracks; the CPU figure for that is
`eval.load.parse_cost`'s.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

import parsers


@dataclass
class Work:
    """Pattern calls, and the characters they went over."""

    calls: int = 0
    chars: int = 0


class CountingPattern:
    """A compiled pattern that tallies its calls and the characters they go over in `work`."""

    __slots__ = ("_pattern", "_work")

    def __init__(self, pattern: re.Pattern[str], work: Work) -> None:
        self._pattern = pattern
        self._work = work

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pattern, name)

    def _went_over(self, chars: int) -> None:
        self._work.calls += 1
        self._work.chars += max(chars, 1)

    def _stopped(self, string: str, pos: int, endpos: int, m: re.Match[str] | None) -> re.Match[str] | None:
        self._went_over((m.end() if m else min(endpos, len(string))) - pos)
        return m

    def search(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self._stopped(string, pos, endpos, self._pattern.search(string, pos, endpos))

    def match(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        # A failed anchored match is counted as one character: how far it looked is not known.
        m = self._pattern.match(string, pos, endpos)
        self._went_over(m.end() - pos if m else 1)
        return m

    def fullmatch(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        m = self._pattern.fullmatch(string, pos, endpos)
        self._went_over(m.end() - pos if m else 1)
        return m

    def finditer(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> Iterator[re.Match[str]]:
        self._went_over(min(endpos, len(string)) - pos)
        return self._pattern.finditer(string, pos, endpos)

    def findall(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> list[Any]:
        self._went_over(min(endpos, len(string)) - pos)
        return self._pattern.findall(string, pos, endpos)

    def sub(self, repl: str | Callable[[re.Match[str]], str], string: str, count: int = 0) -> str:
        self._went_over(len(string))
        return self._pattern.sub(repl, string, count)

    def subn(self, repl: str | Callable[[re.Match[str]], str], string: str, count: int = 0) -> tuple[str, int]:
        self._went_over(len(string))
        return self._pattern.subn(repl, string, count)

    def split(self, string: str, maxsplit: int = 0) -> list[str | Any]:
        self._went_over(len(string))
        return self._pattern.split(string, maxsplit)


def _counting(value: object, work: Work) -> object:
    """`value` with every compiled pattern in it (alone, or in lists and tuples) counting."""
    if isinstance(value, re.Pattern):
        return CountingPattern(value, work)
    if isinstance(value, (list, tuple)):
        items = [_counting(item, work) for item in value]
        if any(new is not old for new, old in zip(items, value, strict=True)):
            return type(value)(items) if isinstance(value, list) else tuple(items)
    return value


def count_pattern_work(monkeypatch: pytest.MonkeyPatch) -> Work:
    """Make every pattern of every `parsers` module count into one `Work`, and return it."""
    work = Work()
    for info in pkgutil.iter_modules(parsers.__path__):
        module = importlib.import_module(f"parsers.{info.name}")
        for name, value in list(vars(module).items()):
            counting = _counting(value, work)
            if counting is not value:
                monkeypatch.setattr(module, name, counting)
    return work


def work_of(work: Work, run: Callable[[], object]) -> Work:
    """The calls and characters counted while `run()` runs."""
    calls, chars = work.calls, work.chars
    run()
    return Work(work.calls - calls, work.chars - chars)
