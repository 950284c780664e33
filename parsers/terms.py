"""Lookup keys for matching a query's references against stored experiences.

Each reference expands to the forms another message is likely to use for the
same thing: a path, its basename and Python module path; a qualified symbol,
its last component and its ``Owner.member`` tail; an exception and its bare
class name. All lowercase, deduplicated, in first-seen order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from parsers.paths import normalize_path, python_module

_SPLIT = re.compile(r"\.|::|#|->")
_PARAMS = re.compile(r"\[.*\]$")
_STOP = frozenset({"__init__", "__init__.py", "self", "cls", "this", "main", "<module>", "init"})


def path_terms(path: str) -> list[str]:
    path = normalize_path(path)
    out = [path]
    if "site-packages/" in path or "dist-packages/" in path:
        out.append(re.split(r"(?:site|dist)-packages/", path, maxsplit=1)[1])
    out.append(path.rsplit("/", 1)[-1])
    module = python_module(path)
    if module:
        out.append(module)
    return out


def symbol_terms(name: str) -> list[str]:
    name = name.strip()
    if not name or "<" in name:
        return []
    parts = [p for p in _SPLIT.split(name) if p]
    if not parts:
        return []
    out = [".".join(parts)]
    if len(parts) >= 3:
        out.append(".".join(parts[-2:]))
    if len(parts) >= 2:
        out.append(parts[-1])
    return out


def test_id_terms(test_id: str) -> list[str]:
    out = [test_id]
    if "::" in test_id:
        path, rest = test_id.split("::", 1)
        out.extend(path_terms(path))
        parts = [_PARAMS.sub("", p) for p in rest.split("::")]
        out.append(".".join(parts))
        out.append(parts[-1])
    else:
        out.extend(symbol_terms(_PARAMS.sub("", test_id))[1:])
    return out


def lookup_keys(raw: Iterable[str]) -> list[str]:
    """`raw` terms lowercased, without the too short, the stop words and repeats, in order."""
    seen: set[str] = set()
    out: list[str] = []
    for term in raw:
        term = term.strip().lower()
        if len(term) < 2 or term in _STOP or term in seen:
            continue
        seen.add(term)
        out.append(term)
    return out
