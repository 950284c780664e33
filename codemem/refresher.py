"""Deferred session rebuilds: a long session's card catches up once its Adds go quiet.

`Memory.add` rebuilds a session's experience on the Add itself while that is cheap
(`sessions.rebuild_due`); otherwise it marks the session here, and this thread rebuilds it
after `quiet_s` without new Adds, or at shutdown.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)


class SessionRefresher:
    def __init__(self, refresh: Callable[[str, str], None], quiet_s: float = 2.0) -> None:
        self._refresh = refresh
        self.quiet_s = quiet_s
        self._dirty: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="codemem-refresher", daemon=True)
        self._thread.start()

    def mark(self, user_id: str, session_id: str) -> None:
        with self._lock:
            self._dirty[(user_id, session_id)] = time.monotonic()

    def forget(self, user_id: str, session_id: str) -> None:
        """The session was just rebuilt whole: nothing is left to catch up."""
        with self._lock:
            self._dirty.pop((user_id, session_id), None)

    @property
    def pending(self) -> int:
        return len(self._dirty)

    def flush(self, older_than_s: float = 0.0) -> None:
        """Rebuild every marked session untouched for `older_than_s` seconds."""
        now = time.monotonic()
        with self._lock:
            due = [k for k, t in self._dirty.items() if now - t >= older_than_s]
            for k in due:
                del self._dirty[k]
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
            self.flush(self.quiet_s)
