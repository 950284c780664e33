"""The per-user card indexes one `Memory` keeps, shared by the side that writes cards and
the side that searches them.

The session writer puts each card it commits into them and drops a user's indexes after a
delete; the searcher reads them. One object holds all four so that both sides see the same
indexes (`card_indexes.CardIndexes` says how each is kept current).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from codemem.ranking.card_indexes import CardIndexes
from codemem.ranking.fields import FieldIndex
from codemem.ranking.locations import LocationIndex
from codemem.ranking.releases import ReleaseIndex
from codemem.ranking.subjects import SubjectIndex
from codemem.timeline.index import DialogueIndex


class UserIndexes:
    """Each user's code locations, commit subjects, releases, card fields (built only where
    the learned ranking asks for them) and conversations with the facts they state; each kind
    held for at most `max_bytes` characters of card rows (`config.Caches.user_mb`)."""

    def __init__(self, max_bytes: int) -> None:
        self.locations: CardIndexes[LocationIndex] = CardIndexes(LocationIndex, max_bytes)
        self.subjects: CardIndexes[SubjectIndex] = CardIndexes(SubjectIndex, max_bytes)
        self.releases: CardIndexes[ReleaseIndex] = CardIndexes(ReleaseIndex, max_bytes)
        self.fields: CardIndexes[FieldIndex] = CardIndexes(FieldIndex, max_bytes)
        self.dialogue: CardIndexes[DialogueIndex] = CardIndexes(DialogueIndex, max_bytes)

    def put(self, user_key: str, cards: Sequence[Mapping[str, object]]) -> None:
        """Cards of `user_key` just committed: each index takes them in."""
        for indexes in self._all():
            indexes.put(user_key, cards)

    def forget(self, user_key: str | None) -> None:
        """Rows were deleted: the indexes of `user_key` (every user's: None) are read again."""
        for indexes in self._all():
            indexes.forget(user_key)

    def _all(self) -> tuple[CardIndexes[LocationIndex], CardIndexes[SubjectIndex], CardIndexes[ReleaseIndex],
                            CardIndexes[FieldIndex], CardIndexes[DialogueIndex]]:
        return (self.locations, self.subjects, self.releases, self.fields, self.dialogue)

