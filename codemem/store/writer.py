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
from collections.abc import Callable, Sequence
from concurrent.futures import Future

import msgspec

from codemem.store.lance import Store
from codemem.store.schema import Row

log = logging.getLogger(__name__)


class Append(msgspec.Struct):
    rows: list[Row]


class Upsert(msgspec.Struct):
    """Insert or replace `rows` by id in one commit, then delete the rows `stale_ids` names."""

    rows: list[Row]
    stale_ids: list[str] = []


class Revector(msgspec.Struct):
    """Replace `rows` by id where they still exist: vectors embedded again by this store's
    encoder (`codemem/writing/reembedder.py`), never a row brought back."""

    rows: list[Row]


WriteOp = Append | Upsert | Revector


class GroupWriter:
    def __init__(self, store: Store, max_rows: int) -> None:
        self.store = store
        self.max_rows = max_rows
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
        """Appends in one `add`, upserts in one merge, then the stale ids in one delete, and
        vectors embedded again in one merge.

        Ids are unique across sessions, and Memory serialises the Adds of one session, so
        joining the ops of a batch changes nothing but the number of commits."""
        appends = [(op, fut) for op, fut in batch if isinstance(op, Append)]
        upserts = [(op, fut) for op, fut in batch if isinstance(op, Upsert)]
        if appends:
            rows = [r for op, _ in appends for r in op.rows]
            self._settle(appends, lambda: self.store.append(rows), resolve=True)
        if upserts:
            rows = [r for op, _ in upserts for r in op.rows]
            stale = [i for op, _ in upserts for i in op.stale_ids]
            if self._settle(upserts, lambda: self.store.upsert(rows), resolve=not stale) and stale:
                self._settle(upserts, lambda: self.store.delete_ids(stale), resolve=True)
        if revectors := [(op, fut) for op, fut in batch if isinstance(op, Revector)]:
            rows = [r for op, _ in revectors for r in op.rows]
            self._settle(revectors, lambda: self.store.revector(rows), resolve=True)

    def _settle(self, group: Sequence[tuple[WriteOp, Future[None]]], action: Callable[[], None], resolve: bool) -> bool:
        """Run one commit for `group`; on failure each caller gets the error. With `resolve`,
        callers are answered on success too (else a further commit of theirs follows)."""
        try:
            with self.store.write_lock:
                action()
        except Exception as exc:  # the writer thread must survive; each caller gets the error
            log.exception("store write failed")
            for _, fut in group:
                fut.set_exception(exc)
            return False
        if resolve:
            for _, fut in group:
                fut.set_result(None)
        return True
