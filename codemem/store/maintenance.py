"""Background compaction: keeps the fragment count and the unindexed tail small.

Group commit bounds the fragments concurrent Adds create, but a steady trickle of single
Adds still makes one fragment each; this thread folds them together (and into the FTS
index) every `interval_s` once `min_writes` commits have piled up, or as soon as writes go
quiet (a round with no new commit) so the tail never lingers unindexed.

A compaction rewrites fragments, and LanceDB refuses its commit when an upsert or delete
touched one of them meanwhile: under a steady stream of Adds most rounds failed that way
and fragments piled up. So the rewrite holds the
store's write lock (`Store.optimize`), briefly, and the index work runs alongside the
writes; after a failure anyway the next round holds the lock throughout, so it always lands.

Commits are counted from the table's version, so writes by other processes count too; when
several processes share a data directory, one compacts at a time (the compaction lock),
the others skip the round, and the version a round left is kept in the compaction lock's
file, so that no process compacts again the commits another one just compacted.

Counting commits is not enough on its own: a process that starts on a store another left
un-compacted (a bulk import stopped right after its last write) sees no new commit, and
every Search scans the loose fragments and the unindexed tail until the next write. So the
first round runs at once and looks at the store itself, and any round compacts a store
past its bounds (`Maintenance`), in the background: Searches keep answering meanwhile.

A round's index work runs beside the writes, so Adds that land during it are in the version
the round ends at but not in its indexes: a round that ends with rows left unindexed is
followed by another once writes go quiet. Otherwise the last Adds of a burst that landed
mid-round would wait, unindexed and in loose fragments, for the next write.
"""

from __future__ import annotations

import logging
import threading
from datetime import timedelta

from codemem.config import Maintenance
from codemem.store.lance import Store

log = logging.getLogger(__name__)

KEEP_VERSIONS_FOR = timedelta(minutes=2)


class Compactor:
    def __init__(self, store: Store, maintenance: Maintenance) -> None:
        self.store = store
        self.maintenance = maintenance
        self.runs = 0
        self.last_error: str | None = None
        self.failures = 0
        self.left_behind = False  # the last round ended with rows that landed during it, not indexed
        self._unindexed = 0  # rows the last round left outside the indexes
        self._compacted_at = store.version()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="codemem-compactor", daemon=True)

    def start(self) -> None:
        if self.maintenance.interval_s > 0:
            self._thread.start()

    def due(self, pending: int, quiet: bool, first: bool) -> bool:
        """Whether a round should compact: enough commits, writes gone quiet (after commits, or
        after a round that writes overtook), or (at start-up,
        after any commit, or after a failed round) a store past its bounds. A failed round is
        retried even when no write came since: otherwise a store left past its bounds by the
        failure stays so until the next write."""
        if pending >= self.maintenance.min_writes or ((pending > 0 or self.left_behind) and quiet):
            return True
        retry = first or pending > 0 or self.last_error is not None
        return retry and self.maintenance.exceeded(self.store.stats())

    def pending(self) -> int:
        """Commits since the last compaction, by any process."""
        compacted_at = max(self._compacted_at, self.store.locks.compaction.generation() or 0)
        return max(0, self.store.version() - compacted_at)

    def run_once(self) -> bool:
        """One compaction round, unless another process is running one; True if it ran."""
        if not self.store.locks.compaction.acquire(blocking=False):
            return False
        try:
            self.store.optimize(KEEP_VERSIONS_FOR, exclusive=self.last_error is not None)
            self.runs += 1
            self.last_error = None
        except Exception as exc:  # a failed round (e.g. a conflicting upsert) is retried next round
            self.failures += 1
            self.last_error = type(exc).__name__
            log.info("compaction round failed (%s: %.300s); the next one holds the write lock", type(exc).__name__, exc)
        finally:
            try:
                stats = self.store.stats()
                self._compacted_at = stats["version"]
                self.store.locks.compaction.record(self._compacted_at)
                # A follow-up round that indexed nothing more is not followed again (no busy loop).
                unindexed = stats["unindexed_rows"]
                self.left_behind = unindexed > 0 and (not self.left_behind or unindexed < self._unindexed)
                self._unindexed = unindexed
            finally:
                self.store.locks.compaction.release()
        return True

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _loop(self) -> None:
        seen, first = 0, True
        while not self._stop.wait(0 if first else self.maintenance.interval_s):
            pending = seen
            try:
                pending = self.pending()
                if self.due(pending, quiet=pending == seen, first=first):
                    self.run_once()
                    pending = 0
                first = False
            except Exception:  # noqa: BLE001 - e.g. object storage briefly unreachable: next round
                log.exception("compaction check failed")
            seen = pending
