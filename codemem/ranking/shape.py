"""Fit a ranked answer to a reader's window: the whole bounded (long items are cut by
`codemem.clip.clip_middle`).

The reader (an answer model) reads items in order within a limited window, so a single
40k-character tool output must not push the next experience out of it, and the list stops
at a token budget rather than at top_k alone. Tokens are estimated as characters / 4.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

CHARS_PER_TOKEN = 4
T = TypeVar("T")


def within_budget(items: Sequence[T], size: Callable[[T], int], budget_tokens: int, max_bytes: int) -> list[T]:
    """The longest prefix of `items` within `budget_tokens` (0: no budget) and `max_bytes`
    of content; the first item is always kept when it fits the byte cap."""
    out: list[T] = []
    chars = 0
    for item in items:
        n = size(item)
        if chars + n > max_bytes:
            break
        if out and budget_tokens and (chars + n) / CHARS_PER_TOKEN > budget_tokens:
            break
        out.append(item)
        chars += n
    return out
