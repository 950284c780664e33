"""The writing side of a `Memory`: Add, bulk import, deferred rebuilds and deletes.

A `SessionWriter` turns requests into rows (messages, and each session's card and steps),
commits them through the group-commit writer and keeps what this process knows of each
session (`session_state.StateCache`, `session_state.MessageCache`) and the shared card indexes
current. Its threads (the group writer, the compactor, the refresher) start with the first
write, or with `start` in a server, so that a Memory that only searches starts none.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta

import msgspec
import numpy as np

from codemem import heap
from codemem.config import Settings
from codemem.contract.types import AddRequest, AddResult, Message
from codemem.contract.validation import validate_add
from codemem.encoders import Embedder
from codemem.errors import Conflict, InvalidInput
from codemem.experience.building.render import code_window
from codemem.experience.types import CONVERSATION, Experience
from codemem.ranking.user_indexes import UserIndexes
from codemem.store.lance import Store
from codemem.store.maintenance import Compactor
from codemem.store.schema import Row, key_of
from codemem.store.writer import Append, GroupWriter, Upsert
from codemem.writing import derived_rows, session_state
from codemem.writing.add_leader import AddLeader
from codemem.writing.reembedder import Reembedder
from codemem.writing.session_refresher import SessionRefresher
from parsers import exact_terms

_ENCODER = msgspec.json.Encoder()


class SessionWriter:
    """Every write of one `Memory`. Blocking and thread-safe: Adds of one session are
    serialised by its lock, and concurrent Adds share commits (`store.writer.GroupWriter`)."""

    def __init__(self, settings: Settings, embedder: Embedder, store: Store, indexes: UserIndexes) -> None:
        self.settings = settings
        self.embedder = embedder
        self.store = store
        self.indexes = indexes
        self.compactor = Compactor(store, settings.maintenance)
        self._writer: GroupWriter | None = None
        self._refresher: SessionRefresher | None = None
        self._starting = threading.Lock()
        self._closed = False
        caches = settings.caches
        self._histories = session_state.MessageCache(caches.session_mb << 20, caches.session_s)
        self._states = session_state.StateCache(store.locks, max_idle_s=caches.session_s)
        self._heap = heap.Releaser()
        self.reembedder = Reembedder(store, embedder, settings.embedding.max_tokens, settings.embedding.code_window_tokens,
                                     write=lambda op: self.writer.write(op), writing=self._states.writing)
        # Server workers sharing a local data directory: one of them runs every Add.
        lock_dir = store.locks.root
        self._leader = AddLeader(lock_dir, self._add_here) if settings.server.workers > 1 and lock_dir else None

    @property
    def writer(self) -> GroupWriter:
        """The group-commit writer; the first use starts it, the compactor that follows its
        commits, and the re-embedder (vectors another encoder wrote, code windows owed)."""
        if self._writer is None:
            with self._starting:
                if self._writer is None:
                    if self._closed:
                        raise RuntimeError("the store is closed")
                    self.compactor.start()
                    self._writer = GroupWriter(self.store, self.settings.writes.batch_rows)
                    self.reembedder.start()  # stops at once where no vector is owed
        return self._writer

    @property
    def refresher(self) -> SessionRefresher:
        """The thread that rebuilds long sessions once they go quiet; the first use starts it."""
        if self._refresher is None:
            with self._starting:
                if self._refresher is None:
                    if self._closed:
                        raise RuntimeError("the store is closed")
                    self._refresher = SessionRefresher(self.refresh_session, self.settings.writes.refresh_quiet_s,
                                                       tick=self.expire_quiet)
        return self._refresher

    def expire_quiet(self) -> None:
        """Let go of what is kept for the next chunks of sessions gone quiet (their state and
        messages), and hand freed memory back to the system once Adds pause."""
        self._states.expire()
        self._histories.expire()
        self._heap.tick()

    @property
    def pending(self) -> int:
        """Writes queued and not yet committed."""
        return self._writer.pending if self._writer is not None else 0

    def start(self) -> None:
        """Start the writer, the compactor and the refresher now (a server: the compactor
        also brings a store left past its bounds back within them before any write)."""
        _ = self.writer, self.refresher

    def close(self) -> None:
        """Write what is owed and stop whatever was started; a writer never used has nothing to stop."""
        if self._leader is not None:
            self._leader.close()  # the other workers' Adds are run by them from now on
        if self._refresher is not None:
            self._refresher.close()  # deferred rebuilds are written before the writer stops
        self.reembedder.stop()
        with self._starting:
            self._closed = True
        if self._writer is not None:
            self._writer.close()
        self.compactor.stop()

    # -- Add ------------------------------------------------------------------------------

    def add(self, req: AddRequest, experience: Experience | None = None) -> AddResult:
        """Store one chunk durably, with its session's rebuilt experience, in one commit:
        here, or with several server workers in the worker that runs them all (`writing.add_leader`)."""
        if experience is None and self._leader is not None:
            return self._leader.add(req)
        return self._add_here(req, experience)

    def _add_here(self, req: AddRequest, experience: Experience | None = None) -> AddResult:
        """Store one chunk durably, with its session's rebuilt experience, in one commit.

        A retry of a request_id stored in the session stores nothing again (a retry carries
        the same body, so the same session). `experience` replaces the built one for sources
        that are not agent sessions (a git commit); its steps are BM25-indexed, only its
        card is embedded.
        """
        validate_add(req, self.settings.limits.max_image_bytes)
        user_key = key_of(req.user_id)
        request_key = key_of(req.user_id, req.request_id)
        session_key = key_of(req.user_id, req.session_id)

        # Under the session's lock, which other threads and the other processes on this data
        # directory take too (and, on S3, the request's claim for nodes sharing the bucket):
        # a retry, wherever it is answered, sees the first copy.
        body = body_key(req)
        with self.store.locks.session(session_key):
            before = self._session_state(session_key)
            if request_key in before.requests:
                return self._retried(req, request_key, body, before)

            def stored() -> bool:  # read again: another node may store it meanwhile
                return request_key in session_state.state(self.store, session_key).requests

            with self.store.claim(request_key, stored) as mine:
                if not mine:  # another node stored it
                    return self._retried(req, request_key, body, session_state.state(self.store, session_key))
                rows = self._message_rows(req, user_key, request_key, body)
                derived = self._derived_rows(req, rows[0], experience, before)
                if derived is not None and derived.conversation:
                    self._embed_messages(rows)
                self._write_session(session_key, before, rows, derived)
                if derived is None:  # the rebuild waits for the session's quiet time
                    self.refresher.mark(req.user_id, req.session_id)
        self._heap.active()
        return self._result(req, stored=len(rows))

    def _retried(self, req: AddRequest, request_key: str, body: str, state: session_state.SessionState) -> AddResult:
        """The answer to a request whose request_id the session holds: a retry (the same body)
        stores nothing and is answered as the first copy was; another body under the same id
        is a client's mistake, refused with Conflict (409), the first content kept."""
        first = state.bodies.get(request_key)
        if first is not None and first != body:
            raise Conflict(f"request_id {req.request_id!r} was used before with other messages; the first content is "
                           "kept: a retry must resend the same body, and new content needs a new request_id")
        return self._result(req, stored=0, duplicate=True)

    def _session_state(self, session_key: str) -> session_state.SessionState:
        """What is stored of the session: from memory when this process holds it current,
        else one store read (`session_state.StateCache`). Called holding the session's lock."""
        held = self._states.get(session_key)
        if held is None:
            held = session_state.state(self.store, session_key)
            self._states.put(session_key, held)
        return held

    def _write_session(self, session_key: str, before: session_state.SessionState, messages: list[Row],
                       derived: derived_rows.Derived | None) -> None:
        """Commit a session's new messages and derived rows (held under its lock), and keep
        what the session then holds."""
        self._states.writing(session_key)
        if derived is None:
            self.writer.write(Append(messages))
        else:
            self._write_derived(derived, messages)
        self._states.put(session_key, before.after(messages, derived))

    def add_sessions(self, items: list[tuple[AddRequest, Experience]], embed_max_tokens: int | None = None,
                     embedded: Mapping[str, np.ndarray] | None = None) -> list[AddResult]:
        """Store a batch of whole sessions (one request each, with its experience: a git
        change), for importers: one look-up of what is stored, one embedding batch of the
        cards' tasks, one commit. A request whose session holds anything already stores
        nothing (``duplicate``), as does a retry of a stored request.

        ``embed_max_tokens`` caps the card's embedded task (default: the settings');
        ``embedded`` holds vectors embedded beforehand by this embedder, by the text embedded
        (an importer's second process embeds them): cards' tasks at that cap, and their code
        windows at `code_window_tokens`."""
        for req, _ in items:
            validate_add(req, self.settings.limits.max_image_bytes)
        keyed = [(req, exp, key_of(req.user_id, req.session_id)) for req, exp in items]
        results: dict[int, AddResult] = {}
        with self.store.locks.sessions(key for _, _, key in keyed):
            present: set[str] = set()
            for user_key in {key_of(req.user_id) for req, _ in items}:
                present |= self.store.sessions_present(
                    user_key, [k for r, _, k in keyed if key_of(r.user_id) == user_key])
            todo = []
            for i, (req, exp, key) in enumerate(keyed):
                if key in present:
                    results[i] = self._result(req, stored=0, duplicate=True)
                else:
                    present.add(key)  # the same session twice in one batch: stored once
                    todo.append((i, req, exp))
            max_tokens = embed_max_tokens or self.settings.embedding.max_tokens
            vectors = self._by_fingerprint([exp.card.task or exp.card.text for _, _, exp in todo], max_tokens, embedded)
            if tokens := self.settings.embedding.code_window_tokens:  # the cards' code windows, in one batch
                windows = [w for _, _, exp in todo if not exp.metadata.get(CONVERSATION) and (w := code_window(exp.card.text))]
                vectors.update(self._by_fingerprint(windows, tokens, embedded))
            rows: list[Row] = []
            for i, req, exp in todo:
                messages = self._message_rows(req, key_of(req.user_id), key_of(req.user_id, req.request_id), body_key(req))
                derived = derived_rows.experience_rows(exp, messages[0], [], self.embedder, max_tokens,
                                                   len(req.messages), embed_steps=False, vectors=vectors,
                                                   code_window_tokens=self.settings.embedding.code_window_tokens)
                rows += messages + derived.rows
                results[i] = self._result(req, stored=len(messages))
            if rows:
                for _, req, _ in todo:
                    self._states.writing(key_of(req.user_id, req.session_id))
                self.writer.write(Append(rows))
                self._cards_written(rows)
        return [results[i] for i in range(len(keyed))]

    def _by_fingerprint(self, texts: list[str], max_tokens: int,
                        embedded: Mapping[str, np.ndarray] | None) -> dict[str, np.ndarray]:
        """Each text's vector at `max_tokens` by its fingerprint: from `embedded` (by text)
        where it is there, the others embedded in one batch."""
        missing = [t for t in dict.fromkeys(texts) if t not in (embedded or {})]
        by_text = {**(embedded or {}), **dict(zip(missing, self.embedder.embed(missing, max_tokens), strict=True))}
        return dict(zip(self.embedder.fingerprints(texts, max_tokens), (by_text[t] for t in texts), strict=True))

    def _write_derived(self, derived: derived_rows.Derived, messages: list[Row]) -> None:
        """New messages and the session's derived rows in one commit: an append when the
        session had none yet (cheapest), else an upsert that replaces the card in place."""
        rows = messages + derived.rows
        self.writer.write(Upsert(rows, derived.stale_ids) if derived.replaces else Append(rows))
        self._cards_written(derived.rows)

    def _cards_written(self, rows: list[Row]) -> None:
        """Bring the card indexes (locations, subjects) up to the cards among `rows`, just committed."""
        by_user: dict[str, list[dict[str, object]]] = {}
        for r in rows:
            if r.kind == "card":
                by_user.setdefault(r.user_key, []).append({"session_key": r.session_key, "refs": r.refs,
                                                           "metadata": r.metadata, "text": r.text,
                                                           "session_id": r.session_id, "timestamp": r.timestamp})
        for user_key, cards in by_user.items():
            self.indexes.put(user_key, cards)

    def _forget_indexes(self, user_key: str | None) -> None:
        """Rows were deleted: the card indexes of `user_key` (every user's: None) are read again."""
        self.indexes.forget(user_key)

    def _derived_rows(self, req: AddRequest, base: Row, experience: Experience | None,
                      before: session_state.SessionState) -> derived_rows.Derived | None:
        """The session's card and steps after this Add, or None when the rebuild is deferred."""
        if experience is not None:
            return derived_rows.experience_rows(
                experience, base, before.derived, self.embedder,
                self.settings.embedding.max_tokens, len(req.messages), embed_steps=False,
                code_window_tokens=self.settings.embedding.code_window_tokens,
            )
        if not derived_rows.rebuild_due(before.messages + len(req.messages), before.built):
            self._histories.forget(base.session_key)
            return None
        # A card is not embedded while the model is still loading (`Embedder.ready`).
        derived = self._rebuild(base, before, req.messages, defer_untasked=True, defer_vectors=not self.embedder.ready())
        if derived.vector_deferred:  # its card's vector catches up when the session goes quiet
            self.refresher.mark(req.user_id, req.session_id)
        else:  # built from every message, its vector current: no refresh is owed
            self.refresher.forget(req.user_id, req.session_id)
        return derived

    def _rebuild(self, base: Row, before: session_state.SessionState, new_messages: list[Message],
                 defer_untasked: bool = False, defer_vectors: bool = False) -> derived_rows.Derived:
        history = self._histories.messages(self.store, base.user_key, base.session_key, before.messages)
        derived = derived_rows.rebuild(
            self.embedder, self.settings.embedding.max_tokens, base, before.derived, history, new_messages,
            self.settings.embedding.steps, defer_untasked, defer_vectors, self.settings.embedding.code_window_tokens,
        )
        # Cached before the write: if the write fails, the store holds fewer messages than
        # this entry, and the next rebuild reads them back instead.
        self._histories.put(base.session_key, history + new_messages)
        return derived

    def refresh_session(self, user_id: str, session_id: str) -> None:
        """Rebuild a session's card and steps from everything stored (deferred rebuilds)."""
        base = derived_rows.base_row(user_id, session_id, int(time.time() * 1000))
        with self.store.locks.session(base.session_key):
            before = self._session_state(base.session_key)
            if before.messages == 0:  # deleted meanwhile: nothing to rebuild, nothing to revive
                return
            self._write_session(base.session_key, before, [], self._rebuild(base, before, []))

    @staticmethod
    def _result(req: AddRequest, stored: int, duplicate: bool = False) -> AddResult:
        return AddResult(req.request_id, req.user_id, req.session_id, stored=stored, duplicate=duplicate)

    def _embed_messages(self, rows: list[Row]) -> None:
        """Give message rows that have none a vector. A conversation's messages are each
        embedded: there the answer to a question is one turn, said in other words than the
        question's, while a coding session's messages stay BM25-only
        (`Embedding.messages`: embedding them is most of an Add's cost)."""
        todo = [r for r in rows if r.vector is None and r.kind == "message" and r.text.strip()]
        for r, v in zip(todo, self.embedder.embed([r.text for r in todo], self.settings.embedding.max_tokens), strict=True):
            r.vector = v

    def _message_rows(self, req: AddRequest, user_key: str, request_key: str, body: str) -> list[Row]:
        now = int(time.time() * 1000)
        session_key = key_of(req.user_id, req.session_id)
        texts = [m.text for m in req.messages]
        vectors = (
            list(self.embedder.embed(texts, self.settings.embedding.max_tokens))
            if self.settings.embedding.messages
            else [None] * len(texts)
        )
        return [
            Row(
                # The session is in the id: a request_id is one request within its session.
                id="m_" + key_of(session_key, request_key, str(i))[:24],
                user_key=user_key,
                user_id=req.user_id,
                session_key=session_key,
                session_id=req.session_id,
                request_key=request_key,
                kind="message",
                position=i,
                role=msg.role,
                text=text,
                refs=" ".join(exact_terms(text)),  # error codes, test ids, snake_case names: whole
                content=_content_json(msg),
                metadata=_ENCODER.encode({"request_id": req.request_id, "body": body}).decode(),
                created_at=now,
                timestamp=msg.timestamp,
                vector=vectors[i],
            )
            for i, (msg, text) in enumerate(zip(req.messages, texts, strict=True))
        ]

    # -- deletes --------------------------------------------------------------------------

    def delete_user(self, user_id: str) -> int:
        """Remove every memory of one user; returns how many items were removed."""
        if not user_id:
            raise InvalidInput("user_id must be a non-empty string")
        self._histories.clear()
        try:
            with self._deleting():
                return self.store.delete_user(key_of(user_id))
        finally:
            self._forget_indexes(key_of(user_id))

    def delete_experience(self, user_id: str, session_id: str) -> int:
        """Remove one experience of one user (its messages, card and steps); returns how
        many items were removed (0 when there was none). Unlike the readers, it takes the
        session_id whole, never a prefix: a retried delete must not remove another session
        whose id begins with the one removed (the /ui asks with the id it resolved)."""
        if not user_id or not session_id:
            raise InvalidInput("user_id and session_id must be non-empty strings")
        session_key = key_of(user_id, session_id)
        with self.store.locks.session(session_key):
            self._histories.forget(session_key)
            self._states.writing(session_key)
            try:
                return self.store.delete_session(key_of(user_id), session_key)
            finally:
                self._forget_indexes(key_of(user_id))

    def purge(self, older_than: timedelta) -> int:
        """Remove every memory stored more than `older_than` ago, for all users: by when it
        was stored (`created_at`), not by its source's time (`codemem/times.py`), so that
        data is kept for as long as it has been held here, a 2019 commit imported today too."""
        cutoff = int((datetime.now(UTC) - older_than).timestamp() * 1000)
        self._histories.clear()
        try:
            with self._deleting():
                return self.store.delete_older_than(cutoff)
        finally:
            self._forget_indexes(None)

    @contextlib.contextmanager
    def _deleting(self) -> Iterator[None]:
        """Around a delete that no session lock covers: the `deletes` lock is held throughout
        and its generation raised first, so every process drops what it kept of any session
        (`session_state.StateCache`) and keeps nothing it reads while the delete runs, even if
        this process dies before the delete is done."""
        with self.store.locks.deletes:
            self.store.locks.deletes.bump()
            yield


def body_key(req: AddRequest) -> str:
    """A digest of what a request carries besides its ids (its messages, in order, with their
    roles, contents and timestamps): a retry's is the first copy's, other content's is not."""
    return key_of(_ENCODER.encode(req.messages).decode())


def _content_json(msg: Message) -> str:
    if isinstance(msg.content, str):
        return ""
    return _ENCODER.encode(msg.content).decode()


