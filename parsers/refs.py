"""Combining reference sets: the order-preserving union used by callers that
collect refs from many messages of one trajectory."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import fields

from parsers.types import CodeRefs

_FIELDS = tuple(f.name for f in fields(CodeRefs))


def merge_refs(refs: Iterable[CodeRefs]) -> CodeRefs:
    """Union of ``refs`` field by field, first occurrence wins the position."""
    merged: dict[str, list[object]] = {name: [] for name in _FIELDS}
    for ref in refs:
        if not isinstance(ref, CodeRefs):
            continue
        for name in _FIELDS:
            merged[name].extend(getattr(ref, name))
    return CodeRefs(**merged)  # type: ignore[arg-type]
