"""What is stored of a session before an Add (its messages' count and requests, its derived
rows), and the caches that spare an Add reading it: the state and the messages of recently
written sessions, kept current by this process's writes and dropped when another process
writes.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from codemem.contract.types import ContentPart, Message
from codemem.store.lance import Store
from codemem.store.locks import Locks
from codemem.store.schema import DERIVED_KINDS, Row
from codemem.writing.derived_rows import Derived


class SessionState(msgspec.Struct):
    """What is stored of a session before an Add: its messages' count and requests, and
    its derived rows."""

    messages: int
    derived: list[dict[str, object]]  # id, kind, metadata and vector of its card and steps
    requests: frozenset[str] = frozenset()  # the request keys of its stored messages
    # Each stored request's body digest (`session_writer.body_key`), where its rows carry one.
    bodies: dict[str, str] = msgspec.field(default_factory=dict)

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
                            requests=self.requests | {r.request_key for r in messages},
                            bodies={**self.bodies, **_bodies((r.request_key, r.metadata) for r in messages)})


def state(store: Store, session_key: str) -> SessionState:
    """The session's state, in one store read."""
    rows = store.session_rows(session_key, ("message", *DERIVED_KINDS),
                              columns=["id", "kind", "request_key", "metadata", "vector"])
    messages = [r for r in rows if r["kind"] == "message"]
    return SessionState(
        messages=len(messages),
        derived=[{k: r[k] for k in ("id", "kind", "metadata", "vector")} for r in rows if r["kind"] != "message"],
        requests=frozenset(str(r["request_key"]) for r in messages),
        bodies=_bodies((str(r["request_key"]), str(r["metadata"])) for r in messages),
    )


def _bodies(messages: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Each request's body digest from its message rows' (request key, metadata JSON): the
    first row of a request names it (rows stored before digests were kept name none)."""
    out: dict[str, str] = {}
    for request_key, metadata in messages:
        if request_key not in out and (body := msgspec.json.decode(metadata or "{}").get("body")):
            out[request_key] = str(body)
    return out


class StateCache:
    """The state of recently written sessions, so an Add reads nothing of the store first.

    An Add needs its session's state (message count, derived rows) and whether its request
    was stored before: store queries, dear on a table that single-message Adds keep
    fragmented. Here what this process read or wrote of a session is kept, and kept current by its own
    writes. Every writer of a session, in any process, holds the session's lock and raises
    the lock file's generation before it writes (`writing`); an entry is used only while
    the generation is the one this process last saw or set, so a write by another process
    (another worker, a CLI import) makes it read again. Deletes that hold no session lock
    (a user's, a purge) raise the `deletes` generation, which drops every entry, and hold
    the `deletes` lock while they run, when nothing is used or kept (what is read then may be
    going; a deleter that dies midway leaves the generation raised). Without
    lock files (object storage) nothing is kept. Bounded by sessions, least recent out first,
    and an entry goes once its session has been quiet for `max_idle_s` (`expire`): it serves
    a session's next chunks, and a session gone quiet reads its state once more if it comes back.

    Every method but `expire` is called holding the session's lock."""

    def __init__(self, locks: Locks, max_sessions: int = 2048, max_idle_s: float = 20.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.locks = locks
        self.max_sessions = max_sessions
        self.max_idle_s = max_idle_s
        self._clock = clock
        self._entries: OrderedDict[str, SessionState] = OrderedDict()
        self._used: dict[str, float] = {}  # when each entry was last read or written
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
                self._used[session_key] = self._clock()
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
            self._used[session_key] = self._clock()
            self._by_stripe.setdefault(self.locks.stripe(session_key), set()).add(session_key)
            while len(self._entries) > self.max_sessions:
                self._drop(next(iter(self._entries)))

    def expire(self) -> int:
        """Drop the entries of sessions quiet for `max_idle_s`; returns how many went."""
        cutoff = self._clock() - self.max_idle_s
        with self._lock:
            gone = 0
            while self._entries and self._used.get(key := next(iter(self._entries)), 0.0) <= cutoff:
                self._drop(key)
                gone += 1
            return gone

    def __len__(self) -> int:
        return len(self._entries)

    def _clear(self) -> None:
        self._entries.clear()
        self._used.clear()
        self._by_stripe.clear()
        self._seen.clear()

    def _drop(self, session_key: str) -> None:
        """Remove one entry; the caller holds the lock."""
        self._used.pop(session_key, None)
        if self._entries.pop(session_key, None) is not None:
            self._by_stripe.get(self.locks.stripe(session_key), set()).discard(session_key)


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
    than build from a wrong history. Bounded by total characters, least recent out first, and
    an entry goes once its session has been quiet for `max_idle_s` (`expire`): it spares the
    session's next chunks a read, and a session gone quiet has none coming soon.
    """

    def __init__(self, max_chars: int = 64 * 1024 * 1024, max_idle_s: float = 20.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.max_chars = max_chars
        self.max_idle_s = max_idle_s
        self._clock = clock
        # session -> (its messages, their characters, when it was last read or written)
        self._entries: OrderedDict[str, tuple[list[Message], int, float]] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def messages(self, store: Store, user_key: str, session_key: str, stored: int) -> list[Message]:
        """The session's `stored` messages, from memory when they are all there."""
        if stored == 0:
            return []
        with self._lock:
            entry = self._entries.get(session_key)
            if entry is not None and len(entry[0]) == stored:
                self._entries[session_key] = (entry[0], entry[1], self._clock())
                self._entries.move_to_end(session_key)
                return list(entry[0])
        return stored_messages(store, user_key, session_key)

    def put(self, session_key: str, messages: list[Message]) -> None:
        size = sum(len(m.text) for m in messages)
        with self._lock:
            self._drop(session_key)
            if size > self.max_chars:
                return
            self._entries[session_key] = (messages, size, self._clock())
            self._chars += size
            while self._chars > self.max_chars:
                _, (_, dropped, _) = self._entries.popitem(last=False)
                self._chars -= dropped

    def expire(self) -> int:
        """Drop the messages of sessions quiet for `max_idle_s`; returns how many went."""
        cutoff = self._clock() - self.max_idle_s
        with self._lock:
            gone = 0
            while self._entries and next(iter(self._entries.values()))[2] <= cutoff:
                _, (_, dropped, _) = self._entries.popitem(last=False)
                self._chars -= dropped
                gone += 1
            return gone

    @property
    def chars(self) -> int:
        """The characters held."""
        return self._chars

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


