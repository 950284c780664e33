"""Per user: which sessions are dialogue, and every fact their turns state, in time order.

Built from card rows (`CardIndexes` keeps it current with the cards this process writes):
a conversation's card carries the facts its turns state with their times
(`facts_metadata`), so that whether a returned turn was superseded is found without reading
any other session's messages.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Self

from codemem.ranking.card_indexes import CardIndex
from codemem.timeline.facts import Fact, facts, supersedes

FACTS = "facts"  # the card metadata key of a conversation's facts


@dataclass(frozen=True)
class Stated:
    """A fact as one session stated it, and when (Unix ms)."""

    fact: Fact
    ms: int
    session_key: str
    session_id: str


def facts_metadata(texts: Sequence[str], stamps: Sequence[int | None]) -> list[list[object]]:
    """The facts of a session's turns for its card's metadata: [subject, value, replaces, ms]
    per fact (ms None where the turn has no timestamp: the card's own time stands in)."""
    return [[*f.to_json(), ms] for text, ms in zip(texts, stamps, strict=True) for f in facts(text)]


@dataclass
class _Session:
    session_id: str
    conversation: bool
    stated: list[Stated]


class DialogueIndex(CardIndex):
    """The user's sessions (conversation or not) and the facts their conversations state."""

    def __init__(self) -> None:
        self._sessions: dict[str, _Session] = {}
        self._timeline: list[Stated] | None = None  # every fact, oldest first (built on first use)

    def put(self, cards: Iterable[Mapping[str, Any]]) -> None:
        for card in cards:
            key = str(card["session_key"])
            raw = card.get("metadata") or "{}"
            meta = json.loads(raw) if isinstance(raw, str) else dict(raw)
            session_id = str(card.get("session_id") or "")
            card_ms = int(card.get("timestamp") or card.get("created_at") or 0)
            stated = []
            for entry in meta.get(FACTS) or []:
                fact = Fact.from_json(entry[:3]) if isinstance(entry, list) and len(entry) == 4 else None
                if fact is not None:
                    ms = entry[3] if isinstance(entry[3], int) else card_ms
                    stated.append(Stated(fact, ms, key, session_id))
            self._sessions[key] = _Session(session_id, bool(meta.get("conversation")), stated)
        self._timeline = None

    def copy(self) -> Self:
        other = type(self)()
        other._sessions = dict(self._sessions)
        return other

    def conversation(self, session_key: str) -> bool:
        held = self._sessions.get(session_key)
        return held is not None and held.conversation

    def session_id(self, session_key: str) -> str:
        held = self._sessions.get(session_key)
        return held.session_id if held else ""

    def timeline(self) -> list[Stated]:
        """Every fact, oldest first; one that names no subject but replaces a value takes the
        subject that value was stated for ("we replaced Heroku with Fly" after "we host on
        Heroku for hosting")."""
        if self._timeline is None:
            subject_of: dict[str, str] = {}
            out = []
            for s in sorted((s for held in self._sessions.values() for s in held.stated), key=lambda s: s.ms):
                fact = s.fact
                if not fact.subject and fact.replaces in subject_of:
                    fact = Fact(subject_of[fact.replaces], fact.value, fact.replaces)
                    s = Stated(fact, s.ms, s.session_key, s.session_id)
                if fact.subject and fact.value:
                    subject_of[fact.value] = fact.subject
                out.append(s)
            self._timeline = out
        return self._timeline

    def superseded(self, fact: Fact, ms: int, session_key: str) -> tuple[Stated, Stated] | None:
        """Where a later statement replaced `fact` (stated at `ms` in `session_key`): the
        first that did, and the latest in the chain of replacements that follows it."""
        first: Stated | None = None
        latest: Stated | None = None
        timeline = self.timeline()
        # The fact as the index holds it (with the subject it may have taken from an earlier one).
        current = next((s.fact for s in timeline if s.session_key == session_key and s.fact.value == fact.value
                        and s.fact.replaces == fact.replaces), fact)
        for later in timeline:
            if later.ms <= ms or (later.session_key == session_key and later.fact.value == fact.value):
                continue
            if supersedes(later.fact, current):
                first = first or later
                latest = later
                # The chain goes on from the replacement (a value dropped has none to follow).
                current = later.fact if later.fact.value else current
        return (first, latest) if first is not None and latest is not None else None

    def replaced_named(self, text: str, ms: int, session_key: str) -> tuple[Stated, Stated] | None:
        """Where a later session replaced a value that `text` (said at `ms` in `session_key`)
        names: the first change, in another session after it, whose replaced value the text
        names as a word, and the latest in the chain that follows. A statement of a choice
        need not be read to be superseded: the change that replaces it names what it was."""
        lower = text.lower()
        for later in self.timeline():
            fact = later.fact
            if later.ms <= ms or later.session_key == session_key or not (fact.value and fact.replaces):
                continue
            if not fact.replaces.isdigit() and fact.replaces in lower and _named(fact.replaces).search(lower):
                return later, self._latest(later)
        return None

    def current_of_named(self, text: str) -> list[Stated]:
        """For each change whose replaced or new value `text` names as a word ("are we still on
        X?"), the latest statement in the chain of replacements that follows it."""
        lower = text.lower()
        out: list[Stated] = []
        for s in self.timeline():
            fact = s.fact
            if not (fact.value and fact.replaces) or fact.replaces.isdigit():
                continue
            if any(v in lower and _named(v).search(lower) for v in (fact.replaces, fact.value)):
                if (latest := self._latest(s)) not in out:
                    out.append(latest)
        return out

    def _latest(self, first: Stated) -> Stated:
        """The last of the chain of replacements that follows the change `first`."""
        timeline = self.timeline()
        latest, current = first, first.fact
        for later in timeline[timeline.index(first) + 1 :]:
            if supersedes(later.fact, current):
                latest = later
                # The chain goes on from the replacement (a value dropped has none to follow).
                current = later.fact if later.fact.value else current
        return latest


@functools.lru_cache(maxsize=4_096)
def _named(value: str) -> re.Pattern[str]:
    """`value` as a word or words of a lower-cased text."""
    return re.compile(rf"(?<![\w.+#/@-]){re.escape(value)}(?![\w+#/@-]|\.\w)")
