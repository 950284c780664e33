"""Plain-text memories of registered users: what a MemoryArena-style runner asks of a memory.

A runner registers a user (an empty memory), adds one chunk of text per subtask (its trace,
its solution, JSON), and before each subtask asks for the chunks that bear on it. Here:

- Registration is a row of kind "registration" in the items table, so it is durable, and
  `Memory.delete_user` and `Memory.purge` remove it with the rest of the user's data. It has
  no text and no vector: no retriever can return it.
- A chunk is stored through the core's Add as a one-message session: it is indexed, its
  card embedded and ranked like any experience. Its request_id and session_id are
  `chunk:` + a digest of the text, so a retried call stores nothing twice; an identical
  chunk sent again later is the same memory (it carries nothing new).
- Recall runs the core's Search and returns each found chunk's own text, not its card:
  a runner pastes it into a prompt, where card headings would be noise.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime

import msgspec

from codemem.clip import clip_middle
from codemem.contract.types import AddRequest, Hit, Message, SearchRequest
from codemem.contract.validation import require_text
from codemem.errors import InvalidInput, NotFound
from codemem.memory import Memory
from codemem.ranking.shape import CHARS_PER_TOKEN
from codemem.store.schema import key_of
from codemem.store.writer import Upsert
from codemem.writing.derived_rows import base_row

SESSION_PREFIX = "chunk:"
REGISTRATION = "registration"  # the kind of a user's registration row


class Recalled(msgspec.Struct):
    """One chunk found for a question: its text (trimmed when over the item size)."""

    session_id: str
    text: str
    created_at: int  # Unix ms when stored
    score: float


class TextMemories:
    """Registration, Add and recall of text chunks over one `Memory` (stateless itself)."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory

    def initialize(self, user_id: str) -> int:
        """Register `user_id` with an empty memory; returns how many items were removed."""
        require_text(user_id, "user_id")
        removed = self.memory.delete_user(user_id)
        row = msgspec.structs.replace(
            base_row(user_id, REGISTRATION, int(time.time() * 1000)),
            id=_registration_id(user_id), kind=REGISTRATION, role="user",
        )
        self.memory.writer.write(Upsert([row]))  # by id: two initialisations leave one row
        return removed

    def registered(self, user_id: str) -> bool:
        require_text(user_id, "user_id")
        return self.memory.store.has_kind(key_of(user_id), REGISTRATION)

    def _require_registered(self, user_id: str) -> None:
        if not self.registered(user_id):
            raise NotFound("user_id is not initialized; initialize it first")

    def add(self, user_id: str, chunk: str) -> bool:
        """Store one chunk durably; False when this user already holds the same text."""
        self._require_registered(user_id)
        if not chunk.strip():
            raise InvalidInput("chunk must be a non-empty string")
        session_id = SESSION_PREFIX + key_of(chunk)
        req = AddRequest(request_id=session_id, user_id=user_id, session_id=session_id,
                         messages=[Message(role="user", content=chunk)])
        return not self.memory.add(req).duplicate

    def recall(self, user_id: str, question: str, top_k: int, budget_tokens: int) -> list[Recalled]:
        """The chunks the core's Search ranks first for `question`, best first, at most
        `top_k` and within `budget_tokens` (characters / 4; the best one always; 0: no bound).
        Each is trimmed to the service's item size (head and tail kept)."""
        self._require_registered(user_id)
        if not question.strip():
            raise InvalidInput("question must be a non-empty string")
        if top_k < 1:
            raise InvalidInput("top_k must be an integer >= 1")
        # No relevance floor, no quiet answer and no empty one: a user's chunks are the earlier
        # subtasks of one task, each a possible dependency even when it shares few words with
        # the question; the budget bounds the prompt.
        config = self.memory.search_config.replace({"calibration.relevance_floor": 0.0, "calibration.quiet_below": 0.0,
                                                    "calibration.empty_when_unrelated": False})
        hits = self.memory.search(SearchRequest(user_id=user_id, query=question, top_k=top_k), config)
        found = _fit(self._texts(user_id, hits), budget_tokens * CHARS_PER_TOKEN)
        return found[:top_k]

    def _texts(self, user_id: str, hits: Sequence[Hit]) -> list[Recalled]:
        """Each hit's session as its chunk text (cards of other sessions as they are), in
        rank order, one per session."""
        scores: dict[str, float] = {}
        for h in hits:
            scores.setdefault(h.session_id, h.score)
        keys = {key_of(user_id, sid): sid for sid in scores if sid.startswith(SESSION_PREFIX)}
        rows = self.memory.store.sessions_messages(key_of(user_id), keys, columns=["session_key", "text", "created_at"])
        chunks = {keys[str(r["session_key"])]: r for r in rows}
        max_chars = self.memory.search_config.answer.max_item_chars
        out: list[Recalled] = []
        cards = {h.session_id: h for h in hits if h.metadata.get("kind") == "card"}
        for sid, score in scores.items():
            if sid in chunks:
                text, created = str(chunks[sid]["text"]), int(chunks[sid]["created_at"])
            elif sid in cards and isinstance(cards[sid].content, str):
                # A session stored by a plain Add (not a chunk): its card is its compact form.
                text, created = str(cards[sid].content), _ms(cards[sid].created_at)
            else:
                continue
            out.append(Recalled(sid, clip_middle(text.strip(), max_chars)[0], created, score))
        return out


def _fit(found: list[Recalled], max_chars: int) -> list[Recalled]:
    """Greedily, in rank order, the chunks that fit `max_chars` together (0: all); the first
    is always kept, and a chunk too long for what is left is skipped, not the rest."""
    if not max_chars:
        return found
    out: list[Recalled] = []
    used = 0
    for r in found:
        if out and used + len(r.text) > max_chars:
            continue
        out.append(r)
        used += len(r.text)
    return out


def _registration_id(user_id: str) -> str:
    return "r_" + key_of(user_id)[:24]


def _ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


