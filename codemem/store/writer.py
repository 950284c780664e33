"""Group commit: concurrent Adds are joined into one LanceDB write.

Every LanceDB `add` creates a fragment and a table version, and searches slow down with
the fragment count. One writer thread drains whatever is queued, appends it in a single
commit, and only then resolves each caller's future: a caller is answered after its rows
are durable, and 64 concurrent Adds cost one commit instead of 64.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future

import msgspec

from codemem.store.lance import Store
from codemem.store.schema import Row

log = logging.getLogger(__name__)


class Append(msgspec.Struct):
    rows: list[Row]


class Replace(msgspec.Struct):
    """Make the rows in `scope` (a filter on hex keys) exactly `rows`, atomically."""

    rows: list[Row]
    scope: str


WriteOp = Append | Replace


class GroupWriter:
    def __init__(self, store: Store, max_rows: int, on_commit: Callable[[int], None] | None = None) -> None:
        self.store = store
        self.max_rows = max_rows
        self.on_commit = on_commit
        self._queue: queue.Queue[tuple[WriteOp, Future[None]] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="codemem-writer", daemon=True)
        self._closed = False
        self._thread.start()

    def submit(self, op: WriteOp) -> Future[None]:
        fut: Future[None] = Future()
        if self._closed:
            fut.set_exception(RuntimeError("the store is closed"))
            return fut
        self._queue.put((op, fut))
        return fut

    def write(self, op: WriteOp) -> None:
        """Submit and wait until the write is committed (or raise its error)."""
        self.submit(op).result()

    @property
    def pending(self) -> int:
        return self._queue.qsize()

    def close(self) -> None:
        """Finish what is queued, then stop."""
        if not self._closed:
            self._closed = True
            self._queue.put(None)
            self._thread.join()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            batch = [item]
            rows = len(item[0].rows)
            stop = False
            while rows < self.max_rows:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    stop = True
                    break
                batch.append(nxt)
                rows += len(nxt[0].rows)
            self._commit(batch)
            if stop:
                return

    def _commit(self, batch: list[tuple[WriteOp, Future[None]]]) -> None:
        rows = [r for op, _ in batch for r in op.rows]
        scopes = [op.scope for op, _ in batch if isinstance(op, Replace)]
        if not scopes:
            self._settle(batch, lambda: self.store.append(rows))
            return
        # Scopes are per-session filters on hex keys, disjoint between sessions, so one
        # merge over their union is the same as applying each in turn, in one commit.
        # Two ops of the same scope in one batch would fight over it: the writer never
        # gets those, since Memory serialises the Adds of one session.
        scope = " OR ".join(f"({s})" for s in scopes)
        self._settle(batch, lambda: self.store.replace(rows, scope))

    def _settle(self, group: list[tuple[WriteOp, Future[None]]], action: Callable[[], None]) -> None:
        try:
            action()
        except Exception as exc:  # the writer thread must survive; each caller gets the error
            log.exception("store write failed")
            for _, fut in group:
                fut.set_exception(exc)
            return
        if self.on_commit is not None:
            self.on_commit(sum(len(op.rows) for op, _ in group))
        for _, fut in group:
            fut.set_result(None)
