"""Deferred session rebuilds: a long session's card catches up once its Adds go quiet.

`Memory.add` rebuilds a session's experience on the Add itself while that is cheap
(`derived_rows.rebuild_due`); otherwise it marks the session here, and this thread rebuilds it
once it has gone quiet (`SessionRefresher`), or at shutdown.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)


class SessionRefresher:
    """Rebuilds each marked session once it has gone quiet: no Add for `quiet_s`, or for
    twice the time between its last two Adds when that is longer (up to `max_quiet_s`).

    A session whose Adds come every few seconds (a client whose Adds wait in line under
    load) is not quiet between two of them: with a fixed quiet time, a session whose card
    kept its vector was rebuilt and embedded again after nearly every Add, as dear as the Add
    itself."""

    def __init__(self, refresh: Callable[[str, str], None], quiet_s: float = 2.0, max_quiet_s: float = 30.0,
                 clock: Callable[[], float] = time.monotonic, tick: Callable[[], None] | None = None) -> None:
        """`tick` runs after each round of due rebuilds (about every second): the writer's
        housekeeping of what it keeps of quiet sessions."""
        self._refresh = refresh
        self._tick = tick
        self.quiet_s = quiet_s
        self.max_quiet_s = max_quiet_s
        self._clock = clock
        self._dirty: dict[tuple[str, str], float] = {}  # session -> when it is due
        self._last: dict[tuple[str, str], float] = {}  # session -> its last mark, while recent
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="codemem-refresher", daemon=True)
        self._thread.start()

    def mark(self, user_id: str, session_id: str) -> None:
        key = (user_id, session_id)
        now = self._clock()
        with self._lock:
            last = self._last.get(key)
            # A session back after a longer silence was refreshed meanwhile: it starts afresh.
            pace = now - last if last is not None and now - last < self.max_quiet_s else 0.0
            self._last[key] = now
            self._dirty[key] = now + min(self.max_quiet_s, max(self.quiet_s, 2 * pace))

    def forget(self, user_id: str, session_id: str) -> None:
        """The session was just rebuilt whole: nothing is left to catch up."""
        with self._lock:
            self._dirty.pop((user_id, session_id), None)

    @property
    def pending(self) -> int:
        return len(self._dirty)

    def flush(self, only_due: bool = False) -> None:
        """Rebuild every marked session (`only_due`: those gone quiet)."""
        now = self._clock()
        with self._lock:
            due = [k for k, t in self._dirty.items() if not only_due or t <= now]
            for k in due:
                del self._dirty[k]
            self._last = {k: t for k, t in self._last.items() if now - t < self.max_quiet_s}
        for user_id, session_id in due:
            try:
                self._refresh(user_id, session_id)
            except Exception:  # noqa: BLE001 - keep the thread alive; the next Add marks it again
                log.exception("deferred session rebuild failed")

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.flush()

    def _loop(self) -> None:
        while not self._stop.wait(min(1.0, self.quiet_s)):
            self.flush(only_due=True)
            if self._tick is not None:
                try:
                    self._tick()
                except Exception:  # noqa: BLE001 - housekeeping must not stop the rebuilds
                    log.exception("session housekeeping failed")
