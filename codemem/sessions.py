"""A session's derived items: its experience card and step records, rebuilt on every Add.

The messages of one `session_id` may arrive over many Adds, in any chunk size. After each
Add the whole session is rebuilt from its stored messages plus the new ones, and written in
the same commit as the new messages (an upsert by id, so the card is replaced in place), so
a Search never sees a chunk without its card. Steps the new build no longer has are deleted
right after. Vectors of unchanged steps are reused, and unchanged steps are not rewritten:
a rebuild embeds and writes only what changed.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import msgspec
import numpy as np

from codemem import times
from codemem.contract.types import ContentPart, Message
from codemem.embedding import Embedder
from codemem.experience.types import CONVERSATION, Experience
from codemem.store.lance import Store
from codemem.store.locks import Locks
from codemem.store.schema import Row, key_of
from parsers import exact_terms

_ENCODER = msgspec.json.Encoder()

# Rebuilding reads and parses the whole session, so doing it on every Add of a session of
# thousands of messages is quadratic. Up to REBUILD_ALWAYS_UPTO messages it is done on every
# Add; past that, once the session has grown by REBUILD_GROWTH since the last build (linear
# total cost), and a background refresh catches up the rest once the session goes quiet.
REBUILD_ALWAYS_UPTO = 400
REBUILD_GROWTH = 0.25
# The rows a session's build writes (its messages are stored as they came).
DERIVED_KINDS = ("card", "step")


def rebuild_due(total: int, built: int) -> bool:
    return total <= REBUILD_ALWAYS_UPTO or total - built >= REBUILD_GROWTH * built


def base_row(user_id: str, session_id: str, created_at: int) -> Row:
    """The fields every row of one session shares; derived rows are copies of it."""
    return Row(
        id="", user_key=key_of(user_id), user_id=user_id, session_key=key_of(user_id, session_id),
        session_id=session_id, request_key="", kind="", position=0, role="", text="", refs="",
        content="", metadata="{}", created_at=created_at, timestamp=None,
    )


class SessionState(msgspec.Struct):
    """What is stored of a session before an Add: its messages' count and requests, and
    its derived rows."""

    messages: int
    derived: list[dict[str, object]]  # id, kind, metadata and vector of its card and steps
    requests: frozenset[str] = frozenset()  # the request keys of its stored messages

    @property
    def built(self) -> int:
        """How many messages the stored card was built from."""
        card = next((r for r in self.derived if r["kind"] == "card"), None)
        return int(msgspec.json.decode(str(card["metadata"])).get("messages", 0)) if card else 0

    def after(self, messages: list[Row], derived: Derived | None) -> SessionState:
        """The state once `messages` and `derived` (None: no rebuild) are stored."""
        rows = self.derived
        if derived is not None:
            written: dict[str, dict[str, object]] = {
                r.id: {"id": r.id, "kind": r.kind, "metadata": r.metadata, "vector": r.vector} for r in derived.rows}
            gone = set(derived.stale_ids) | written.keys()
            rows = [r for r in rows if r["id"] not in gone] + list(written.values())
        return SessionState(messages=self.messages + len(messages), derived=rows,
                            requests=self.requests | {r.request_key for r in messages})


def state(store: Store, session_key: str) -> SessionState:
    """The session's state, in one store read."""
    rows = store.session_rows(session_key, ("message", *DERIVED_KINDS),
                              columns=["id", "kind", "request_key", "metadata", "vector"])
    messages = [r for r in rows if r["kind"] == "message"]
    return SessionState(
        messages=len(messages),
        derived=[{k: r[k] for k in ("id", "kind", "metadata", "vector")} for r in rows if r["kind"] != "message"],
        requests=frozenset(str(r["request_key"]) for r in messages),
    )


class StateCache:
    """The state of recently written sessions, so an Add reads nothing of the store first.

    An Add read its session's state (message count, derived rows) and whether its request
    was stored before: two or three store queries, dear on a table that single-message Adds
    keep fragmented, and most of an Add's reading (eval/README.md, "One Add's reads"). Here
    what this process read or wrote of a session is kept, and kept current by its own
    writes. Every writer of a session, in any process, holds the session's lock and raises
    the lock file's generation before it writes (`writing`); an entry is used only while
    the generation is the one this process last saw or set, so a write by another process
    (another worker, a CLI import) makes it read again. Deletes that hold no session lock
    (a user's, a purge) raise the `deletes` generation, which drops every entry, and hold
    the `deletes` lock while they run, when nothing is used or kept (what is read then may be
    going; a deleter that dies midway leaves the generation raised). Without
    lock files (object storage) nothing is kept. Bounded by sessions, least recent out first.

    Every method is called holding the session's lock."""

    def __init__(self, locks: Locks, max_sessions: int = 2048) -> None:
        self.locks = locks
        self.max_sessions = max_sessions
        self._entries: OrderedDict[str, SessionState] = OrderedDict()
        self._by_stripe: dict[int, set[str]] = {}
        self._seen: dict[int, int] = {}  # each stripe's generation the entries are current at
        self._deletes: int | None = None
        self._lock = threading.Lock()

    def get(self, session_key: str) -> SessionState | None:
        """The session's state if this process holds a current one."""
        stripe = self.locks.stripe(session_key)
        generation = self.locks.session(session_key).generation()
        deletes = self.locks.deletes.generation()  # read before the probe: a delete after it raises it
        if self.locks.deletes.held():
            return None
        with self._lock:
            if deletes != self._deletes:  # rows may be gone anywhere: start again
                self._clear()
                self._deletes = deletes
            if generation is None:
                return None
            if self._seen.get(stripe) != generation:  # another process wrote one of its sessions
                for key in self._by_stripe.pop(stripe, set()):
                    self._entries.pop(key, None)
                self._seen[stripe] = generation  # what is read from now on is current at it
            entry = self._entries.get(session_key)
            if entry is not None:
                self._entries.move_to_end(session_key)
            return entry

    def writing(self, session_key: str) -> None:
        """This process is about to write the session: its generation is raised first (a
        crash after the write still tells the others) and its entry dropped until `put`."""
        stripe = self.locks.stripe(session_key)
        generation = self.locks.session(session_key).bump()
        with self._lock:
            self._drop(session_key)
            if generation is None:
                return
            if self._seen.get(stripe) != generation - 1:
                for key in self._by_stripe.pop(stripe, set()):
                    self._entries.pop(key, None)
            self._seen[stripe] = generation

    def put(self, session_key: str, state: SessionState) -> None:
        """The session's state as this process has just read or written it (kept only while
        its stripe's generation is known: not on object storage, nor after a `get` saw a
        delete meanwhile, nor while one runs)."""
        held = self.locks.deletes.held()
        with self._lock:
            self._drop(session_key)
            if held or self.locks.stripe(session_key) not in self._seen:
                return
            self._entries[session_key] = state
            self._by_stripe.setdefault(self.locks.stripe(session_key), set()).add(session_key)
            while len(self._entries) > self.max_sessions:
                self._drop(next(iter(self._entries)))

    def _clear(self) -> None:
        self._entries.clear()
        self._by_stripe.clear()
        self._seen.clear()

    def _drop(self, session_key: str) -> None:
        """Remove one entry; the caller holds the lock."""
        if self._entries.pop(session_key, None) is not None:
            self._by_stripe.get(self.locks.stripe(session_key), set()).discard(session_key)


def card_id(session_key: str) -> str:
    return "c_" + session_key[:24]


def stored_messages(store: Store, user_key: str, session_key: str) -> list[Message]:
    """The session's messages in arrival order (Add by Add, then position within the Add)."""
    rows = store.session_rows(
        session_key, ["message"], user_key=user_key,
        columns=["role", "text", "content", "timestamp", "created_at", "request_key", "position"],
    )
    rows.sort(key=lambda r: (r["created_at"], r["request_key"], r["position"]))
    return [_message(r) for r in rows]


def _message(r: dict[str, Any]) -> Message:
    content: str | list[ContentPart] = str(r["text"])
    if r["content"]:
        content = msgspec.json.decode(str(r["content"]), type=list[ContentPart])
    ts = r["timestamp"]
    return Message(role=str(r["role"]), content=content, timestamp=int(ts) if ts is not None else None)  # type: ignore[arg-type]


class MessageCache:
    """The messages of recently active sessions, so a rebuild does not read them back.

    An entry is used only when it holds exactly as many messages as the store does, so a
    failed write, or another process adding to the same session, makes it reload rather
    than build from a wrong history. Bounded by total characters, least recent out first.
    """

    def __init__(self, max_chars: int = 64 * 1024 * 1024) -> None:
        self.max_chars = max_chars
        self._entries: OrderedDict[str, tuple[list[Message], int]] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def messages(self, store: Store, user_key: str, session_key: str, stored: int) -> list[Message]:
        """The session's `stored` messages, from memory when they are all there."""
        if stored == 0:
            return []
        with self._lock:
            entry = self._entries.get(session_key)
            if entry is not None and len(entry[0]) == stored:
                self._entries.move_to_end(session_key)
                return list(entry[0])
        return stored_messages(store, user_key, session_key)

    def put(self, session_key: str, messages: list[Message]) -> None:
        size = sum(len(m.text) for m in messages)
        with self._lock:
            self._drop(session_key)
            if size > self.max_chars:
                return
            self._entries[session_key] = (messages, size)
            self._chars += size
            while self._chars > self.max_chars:
                _, (_, dropped) = self._entries.popitem(last=False)
                self._chars -= dropped

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._chars = 0

    def forget(self, session_key: str) -> None:
        with self._lock:
            self._drop(session_key)

    def _drop(self, session_key: str) -> None:
        """Remove one entry; the caller holds the lock."""
        old = self._entries.pop(session_key, None)
        if old is not None:
            self._chars -= old[1]


class Derived(msgspec.Struct):
    """A session's new derived rows, and what they replace."""

    rows: list[Row]
    stale_ids: list[str]  # derived rows stored before that the new build no longer has
    replaces: bool  # the session had derived rows before (the card is updated in place)
    conversation: bool = False  # a session with no code work (`Experience.metadata[CONVERSATION]`)
    # The card kept its stored vector although its embedded text changed (`defer_untasked`):
    # a later rebuild (the session's quiet-time refresh) embeds it.
    vector_deferred: bool = False


def experience_rows(
    experience: Experience,
    base: Row,
    stored: list[dict[str, object]],
    embedder: Embedder,
    max_tokens: int,
    message_count: int,
    embed_steps: bool,
    vectors: dict[str, np.ndarray] | None = None,
    defer_untasked: bool = False,
    message_times: Sequence[int | None] = (),
    defer_vectors: bool = False,
) -> Derived:
    """Rows for the card and steps of one session; `base` carries the ids and timestamps
    (the card's source time is `base.timestamp`), `stored` the session's derived rows before
    (their vectors are reused where unchanged). A step whose message has a time in
    `message_times` (by position) is dated at it, any other at the card's time.

    With `embed_steps` off only the card gets a vector and steps stay BM25- and
    reference-indexed: embedding every step would be most of an Add's cost. `vectors`
    (fingerprint -> vector) are embeddings a batch computed beforehand.

    A card with no task (no user text in the session yet: a stream that starts mid-session)
    embeds its whole text, which every Add changes; with `defer_untasked` it keeps its stored
    vector instead (`Derived.vector_deferred`), so such a session costs one embedding when it
    goes quiet rather than one per Add (a model pass over its whole text, as dear as the
    Add itself). With `defer_vectors` (the model is not
    loaded yet) nothing is embedded: the card keeps its stored vector, or has none, and the
    session's quiet-time refresh embeds it."""
    card = experience.card
    conversation = bool(experience.metadata.get(CONVERSATION))
    # A conversation's card carries no coding fields: they would only say "none".
    coding: dict[str, object] = {} if conversation else {
        "edited_files": card.edited_files,
        "edited_symbols": card.edited_symbols,
        "tests_passed": card.tests_passed,
        "errors": card.errors[:10],
    }
    if card.mentioned_files:
        coding["mentioned_files"] = card.mentioned_files
    if card.merged:  # a merge's commits, for naming the ones a Search matched (`ranking/merged.py`)
        coding["merged"] = card.merged
    card_meta = {
        **coding,
        "outcome": card.outcome,
        "messages": message_count,
        "steps": len(experience.steps),
        **experience.metadata,
    }
    rows = [
        msgspec.structs.replace(
            base, id=card_id(base.session_key), kind="card", position=-1, role="assistant",
            text=card.text, refs=" ".join(experience.terms), metadata=_ENCODER.encode(card_meta).decode(),
        )
    ]
    for i, step in enumerate(experience.steps):
        meta = {"step": step.kind, "files": step.files, "symbols": step.symbols, "errors": step.errors[:5],
                **experience.metadata}
        refs = dict.fromkeys([*(t.lower() for t in (*step.files, *step.symbols)), *exact_terms(step.text)])
        at = message_times[step.position] if 0 <= step.position < len(message_times) else None
        rows.append(
            msgspec.structs.replace(
                base, id="st_" + key_of(base.session_key, str(i), step.kind)[:24], kind="step",
                position=step.position, role="assistant", text=step.text, refs=" ".join(refs),
                metadata=_ENCODER.encode(meta).decode(), timestamp=base.timestamp if at is None else at,
            )
        )
    # The card's vector reads the task alone: a later task is compared with earlier tasks,
    # and the task does not change as the session's chunks arrive, so it is embedded once.
    texts = [card.task or card.text] + ([st.text for st in experience.steps] if embed_steps else [])
    kept = _stored_card(stored) if defer_vectors or (defer_untasked and not card.task) else None
    if not defer_vectors and kept is not None and embedder.fingerprints(texts[:1], max_tokens)[0] == _vec_key(kept):
        kept = None  # the model's input did not change: its vector is reused below, none is owed
    if kept is not None:  # the card keeps its vector (and its fingerprint)
        rows[0].vector = np.asarray(kept["vector"], dtype=np.float32)
        rows[0].metadata = _ENCODER.encode(card_meta | {"vec": _vec_key(kept)}).decode()
    if not defer_vectors:  # the steps are embedded, and the card unless it kept its vector
        start = 0 if kept is None else 1
        _embed(rows[start: len(texts)], texts[start:], stored, embedder, max_tokens, vectors or {})
    new_ids = {r.id for r in rows}
    stale = [str(r["id"]) for r in stored if r["id"] not in new_ids]
    return Derived(rows=rows[:1] + _changed(rows[1:], stored), stale_ids=stale, replaces=bool(stored),
                   conversation=conversation, vector_deferred=defer_vectors or kept is not None)


def _changed(steps: list[Row], stored: list[dict[str, object]]) -> list[Row]:
    """The step rows that are new or differ from their stored copy. A rebuild after an Add
    changes the last steps at most, and the store's merge costs by the rows it writes (a card
    with its steps about twice the card alone). Each step's metadata
    keeps a digest of what it stores (`h`) to compare with."""
    held = {r["id"]: msgspec.json.decode(str(r["metadata"])).get("h") for r in stored if r["kind"] == "step"}
    out = []
    for r in steps:
        meta = msgspec.json.decode(r.metadata)
        meta["h"] = hashlib.blake2b(_ENCODER.encode([r.text, r.refs, r.position, r.role, r.content, meta]),
                                    digest_size=8).hexdigest()
        r.metadata = _ENCODER.encode(meta).decode()
        if held.get(r.id) != meta["h"]:
            out.append(r)
    return out


def _stored_card(stored: list[dict[str, object]]) -> dict[str, object] | None:
    """The stored card row, when it has a vector."""
    return next((r for r in stored if r["kind"] == "card" and r.get("vector") is not None), None)


def _vec_key(row: dict[str, object]) -> object:
    """The fingerprint of the input the row's vector was embedded from (None: no vector)."""
    return msgspec.json.decode(str(row["metadata"])).get("vec")


def _embed(rows: list[Row], texts: list[str], stored: list[dict[str, object]], embedder: Embedder, max_tokens: int,
           computed: dict[str, np.ndarray]) -> None:
    """Set each row's vector to the embedding of its text in `texts`, reusing stored vectors
    wherever the model's input is unchanged (the fingerprint is kept in `metadata.vec`)."""
    known = {_vec_key(r): np.asarray(r["vector"], dtype=np.float32) for r in stored} | computed
    keys = embedder.fingerprints(texts, max_tokens)
    missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in known}
    vectors = embedder.embed(list(missing.values()), max_tokens)
    known.update(zip(missing, vectors, strict=True))
    for key, r in zip(keys, rows, strict=True):
        r.vector = known[key]
        meta = msgspec.json.decode(r.metadata)
        meta["vec"] = key
        r.metadata = _ENCODER.encode(meta).decode()


def rebuild(
    embedder: Embedder,
    max_tokens: int,
    base: Row,
    stored: list[dict[str, object]],
    history: list[Message],
    new_messages: list[Message],
    embed_steps: bool,
    defer_untasked: bool = False,
    defer_vectors: bool = False,
) -> Derived:
    """The session's card and step rows after `new_messages` join its `history`."""
    # Imported here: building an experience parses trajectories, which a search never does.
    from codemem.experience import build_experience

    messages = history + new_messages
    experience = build_experience(messages)
    stamps = [m.timestamp for m in messages]
    # The experience is as recent as its latest message (`codemem/times.py`).
    base = msgspec.structs.replace(base, timestamp=times.latest(stamps))
    return experience_rows(experience, base, stored, embedder, max_tokens, len(messages), embed_steps,
                           defer_untasked=defer_untasked, message_times=stamps, defer_vectors=defer_vectors)
