"""What a memory holds, for a person browsing it: each user's counts and storage, one user's
experiences, one experience whole (card, every step, every message).

Search answers an agent within a token budget; these read everything stored, unranked and
untrimmed, so that a person can see what the agents have learned and remove what is wrong.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import msgspec

from codemem import times
from codemem.store.lance import Store
from codemem.store.schema import CODE_WINDOW, RESULT_COLUMNS, key_of


class UserSummary(msgspec.Struct, frozen=True):
    """One user_id's memory: how much it holds and when it last grew."""

    user_id: str
    experiences: int  # experience cards (one per session or commit)
    messages: int
    items: int  # every stored row: messages, cards, steps
    stored_bytes: int | None  # text, parts, metadata, references and vectors (see Inventory); None: not measured
    last_write_ms: int  # Unix ms of the newest row


class StoredItem(msgspec.Struct, frozen=True):
    """One stored row as a person reads it: metadata decoded, nothing trimmed."""

    id: str
    session_id: str
    kind: str  # "message", "card" or "step"
    position: int
    role: str
    text: str
    content: str  # JSON of non-text parts (images), "" for plain text
    metadata: dict[str, Any]
    created_at: int  # Unix ms when stored
    timestamp: int | None  # the source's own time, Unix ms (a card's: its latest message's, a commit's date)

    @property
    def at(self) -> int:
        """When its source happened where known, else when it was stored (`codemem/times.py`)."""
        return times.source_ms({"timestamp": self.timestamp, "created_at": self.created_at})


class ExperienceRecord(msgspec.Struct, frozen=True):
    """One experience whole: its card, its steps and its messages in session order."""

    user_id: str
    session_id: str
    card: StoredItem
    steps: list[StoredItem]
    messages: list[StoredItem]  # empty unless asked for


class Inventory:
    """Each user's figures. Counts and last writes are read fresh (small columns); storage
    needs every text read, so it is measured again only once the store has changed and the
    last measure is `max_age_s` old: a busy memory's page stays fast, its storage figure at
    most that much behind."""

    def __init__(self, store: Store, max_age_s: float = 30.0) -> None:
        self.store, self.max_age_s = store, max_age_s
        self._sizes: dict[str, int] = {}
        self._measured: tuple[int, float] | None = None  # (store version, monotonic time)
        self._lock = threading.Lock()

    def users(self, sizes: bool = True) -> list[UserSummary]:
        """Every user_id in the store, most recently written first (without the storage
        figure, a scan of every text, when `sizes` is False)."""
        rows = self.store.row_facts()
        if rows.num_rows == 0:
            return []
        kinds = rows.group_by(["user_id", "kind"]).aggregate([("kind", "count"), ("created_at", "max")]).to_pylist()
        counts: dict[str, dict[str, int]] = {}
        last: dict[str, int] = {}
        for r in kinds:
            counts.setdefault(r["user_id"], {})[r["kind"]] = int(r["kind_count"])
            last[r["user_id"]] = max(last.get(r["user_id"], 0), int(r["created_at_max"]))
        stored = self.sizes(set(counts)) if sizes else {}
        summaries = [
            UserSummary(user_id=user, experiences=c.get("card", 0), messages=c.get("message", 0),
                        items=sum(n for kind, n in c.items() if kind != CODE_WINDOW), stored_bytes=stored.get(user, 0) if sizes else None,
                        last_write_ms=last[user])
            for user, c in counts.items()
        ]
        return sorted(summaries, key=lambda s: (-s.last_write_ms, s.user_id))

    def sizes(self, users: set[str]) -> dict[str, int]:
        """Stored bytes per user_id, measured again when a user is new to the last measure."""
        with self._lock:
            version, now = self.store.version(), time.monotonic()
            stale = self._measured is None or not users <= self._sizes.keys() or (
                version != self._measured[0] and now - self._measured[1] >= self.max_age_s)
            if stale:
                self._sizes, self._measured = self.store.user_bytes(), (version, now)
            return self._sizes


def cards_of(store: Store, user_id: str) -> list[StoredItem]:
    """Every experience card of one user, newest first by its source's time (a commit's
    date, a session's latest message), not by when it was stored: an imported history is
    stored in one minute."""
    rows = [r for r in store.user_rows(key_of(user_id), "card") if r["user_id"] == user_id]
    return sorted((_item(r) for r in rows), key=lambda c: (-c.at, c.session_id))


def experience_record(store: Store, user_id: str, session_id: str, with_messages: bool) -> ExperienceRecord | None:
    """One session's card and steps (and messages when asked), or None when it has no card."""
    user_key, session_key = key_of(user_id), key_of(user_id, session_id)
    kinds = ["card", "step", "message"] if with_messages else ["card", "step"]
    rows = [r for r in store.session_rows(session_key, kinds, columns=[*RESULT_COLUMNS, "request_key"],
                                          user_key=user_key) if r["user_id"] == user_id]
    card = next((r for r in rows if r["kind"] == "card"), None)
    if card is None:
        return None
    steps = sorted((r for r in rows if r["kind"] == "step"), key=lambda r: int(r["position"]))
    messages = sorted((r for r in rows if r["kind"] == "message"),
                      key=lambda r: (r["created_at"], r["request_key"], r["position"]))
    return ExperienceRecord(user_id, session_id, _item(card), [_item(r) for r in steps],
                            [_item(r) for r in messages])


def _item(row: dict[str, Any]) -> StoredItem:
    meta = json.loads(str(row["metadata"])) if row["metadata"] else {}
    ts = row["timestamp"]
    return StoredItem(
        id=str(row["id"]), session_id=str(row["session_id"]), kind=str(row["kind"]),
        position=int(row["position"]), role=str(row["role"]), text=str(row["text"]),
        content=str(row["content"]), metadata=meta if isinstance(meta, dict) else {"metadata": meta},
        created_at=int(row["created_at"]), timestamp=int(ts) if ts is not None else None,
    )
