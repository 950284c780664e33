"""Staleness of past changes: when later history edits the code a change edited, its card
says so (``changed since: <sha> <date> <subject>``), so a reader of an old fix knows the code
moved on and where to look next.

An import walks the history newest first; ``Staleness`` remembers, for each piece of code
(a file's symbol, or the file when the diff named no symbol), the oldest change seen so far
that edited it: when an older change edited the same code, that one is the next change
after it. Only what one import walks is compared: changes stored by an earlier import are
not revisited when a later import adds newer ones.
"""

from __future__ import annotations

import msgspec

from codemem.experience.building.render import CARD_CHARS, render_card
from codemem.experience.types import Experience

__all__ = ["Staleness"]


class Staleness:
    def __init__(self, max_card_chars: int = CARD_CHARS) -> None:
        self._next: dict[tuple[str, str], tuple[int, str]] = {}  # code -> (walk index, "sha date subject")
        self._walked = 0
        self._max_card_chars = max_card_chars

    def mark(self, experience: Experience) -> Experience:
        """``experience`` (the next one, newest first), with ``changed_since`` when a later
        change walked before it edited the same code."""
        meta = experience.metadata
        line = f"{str(meta.get('commit', ''))[:10]} {meta.get('date', '')} {meta.get('subject', '')}".strip()
        index = self._walked
        self._walked += 1
        keys = _code_keys(experience)
        later = [self._next[k] for k in keys if k in self._next]
        for key in keys:
            self._next[key] = (index, line)
        if not later:
            return experience
        _, since = max(later)  # the latest walked = the first change after this one
        card = msgspec.structs.replace(experience.card, changed_since=since)
        card = msgspec.structs.replace(card, text=render_card(card, self._max_card_chars))
        return msgspec.structs.replace(experience, card=card, metadata={**meta, "changed_since": since})


def _code_keys(experience: Experience) -> set[tuple[str, str]]:
    keys: set[tuple[str, str]] = set()
    for step in experience.steps:
        if not step.files:
            continue
        path = step.files[0]
        keys.update((path, s) for s in step.symbols) if step.symbols else keys.add((path, ""))
    return keys
