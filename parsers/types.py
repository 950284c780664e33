"""Value types shared by every parser: plain frozen dataclasses, so they hash,
compare, pickle and encode with msgspec/json without any glue code.

Every list of names is deduplicated in first-seen order on construction, so
callers can build them naively and still hand out stable, compact results.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import TypeVar

from parsers.terms import lookup_keys, path_terms, symbol_terms, test_id_terms

_T = TypeVar("_T")


def unique(items: Iterable[_T]) -> list[_T]:
    """Order-preserving dedup; drops empty strings, which are never a useful reference."""
    seen: set[_T] = set()
    out: list[_T] = []
    for item in items:
        if item == "" or item in seen:
            continue
        seen.add(item)
        out.append(item)
    return out


@dataclass(frozen=True, slots=True)
class Symbol:
    """A definition or a call site found by a tree-sitter tags query.

    ``qualified_name`` joins the enclosing definitions with ``.`` (``QuerySet.filter``,
    Rust ``Type.method``, Go ``T.Method``); for calls it is the callee as written,
    minus a leading ``self.``/``this.`` (``models.Q``, ``obj.save``).
    """

    name: str
    qualified_name: str
    kind: str
    line: int


@dataclass(frozen=True, slots=True)
class Frame:
    """One stack-trace frame; ``language`` is the trace style it was read from."""

    file: str
    line: int | None
    function: str | None
    language: str


@dataclass(frozen=True, slots=True)
class Hunk:
    """One ``@@`` hunk. ``header`` is git's function context after the second ``@@``;
    ``symbols`` are the qualified names enclosing the changed lines; ``body`` is every line
    in order with its tag (``" "`` context, ``"+"`` added, ``"-"`` removed), for readers
    that need the two sides with their context. A hand-written ``@@`` without line numbers
    is not ``located``: its starts are 1 and its lengths are counted from its body."""

    old_start: int
    old_len: int
    new_start: int
    new_len: int
    header: str
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    symbols: list[str] = field(default_factory=list)
    body: list[str] = field(default_factory=list)
    located: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "symbols", unique(self.symbols))


@dataclass(frozen=True, slots=True)
class DiffFile:
    """One file of a diff. ``path`` is the new path (the old one for deletions);
    ``old_path`` is set only when the file was renamed or copied."""

    path: str
    old_path: str | None
    language: str | None
    hunks: list[Hunk] = field(default_factory=list)
    symbols: list[str] = field(default_factory=list)
    added: int = 0
    removed: int = 0
    is_new: bool = False
    is_deleted: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "symbols", unique(self.symbols))


@dataclass(frozen=True, slots=True)
class CodeRefs:
    """Everything code-like found in a piece of trajectory text."""

    files: list[str] = field(default_factory=list)
    symbols: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    error_messages: list[str] = field(default_factory=list)
    frames: list[Frame] = field(default_factory=list)
    test_ids: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        for f in fields(self):
            object.__setattr__(self, f.name, unique(getattr(self, f.name)))

    def is_empty(self) -> bool:
        return not any(getattr(self, f.name) for f in fields(self))

    def terms(self) -> list[str]:
        """Flat, lowercase lookup keys (paths, basenames, module paths, symbol tails...)."""
        raw: list[str] = []
        for path in self.files:
            raw.extend(path_terms(path))
        for symbol in self.symbols:
            raw.extend(symbol_terms(symbol))
        for exc in self.exceptions:
            raw.extend(symbol_terms(exc))
        for frame in self.frames:
            if frame.file and not frame.file.startswith(("<", "node:")):
                raw.extend(path_terms(frame.file))
            if frame.function:
                raw.extend(symbol_terms(frame.function))
        for test_id in self.test_ids:
            raw.extend(test_id_terms(test_id))
        return lookup_keys(raw)
