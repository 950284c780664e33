"""The per-user card indexes one `Memory` keeps, shared by the side that writes cards and
the side that searches them.

The session writer puts each card it commits into them and drops a user's indexes after a
delete; the searcher reads them. One object holds all four so that both sides see the same
indexes (`card_indexes.CardIndexes` says how each is kept current).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from codemem.ranking.card_indexes import CardIndexes
from codemem.ranking.fields import FieldIndex
from codemem.ranking.locations import LocationIndex
from codemem.ranking.releases import ReleaseIndex
from codemem.ranking.subjects import SubjectIndex
from codemem.timeline.index import DialogueIndex


@dataclass
class UserIndexes:
    """Each user's code locations, commit subjects, releases, card fields and conversations
    with the facts they state."""

    locations: CardIndexes[LocationIndex] = field(default_factory=lambda: CardIndexes(LocationIndex))
    subjects: CardIndexes[SubjectIndex] = field(default_factory=lambda: CardIndexes(SubjectIndex))
    releases: CardIndexes[ReleaseIndex] = field(default_factory=lambda: CardIndexes(ReleaseIndex))
    fields: CardIndexes[FieldIndex] = field(default_factory=lambda: CardIndexes(FieldIndex))
    dialogue: CardIndexes[DialogueIndex] = field(default_factory=lambda: CardIndexes(DialogueIndex))

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

