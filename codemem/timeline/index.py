"""Per user: which sessions are dialogue.

Built from card rows (`CardIndexes` keeps it current with the cards this process writes), so a
Search knows whether its best sessions are people talking (answered turn by turn,
`timeline/turns.py`) without reading any session's messages.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Self

from codemem.ranking.card_indexes import CardIndex


class DialogueIndex(CardIndex):
    """Whether each of the user's sessions is a conversation."""

    def __init__(self) -> None:
        self._sessions: dict[str, bool] = {}  # session key -> a conversation

    def put(self, cards: Iterable[Mapping[str, Any]]) -> None:
        for card in cards:
            raw = card.get("metadata") or "{}"
            meta = json.loads(raw) if isinstance(raw, str) else dict(raw)
            self._sessions[str(card["session_key"])] = bool(meta.get("conversation"))

    def copy(self) -> Self:
        other = type(self)()
        other._sessions = dict(self._sessions)
        return other

    def conversation(self, session_key: str) -> bool:
        return self._sessions.get(session_key, False)
