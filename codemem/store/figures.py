"""The store's figures as last read, refreshed off the caller's thread.

A health check must answer at once whatever the load. Reading the figures opens the table's
manifest, fragments and index statistics, and under 32 large Adds that waited behind their
commits: /health took 6.4 s, past the proxy's health timeout, and the proxy took its only
upstream down. So a reader gets the figures last read, and a read older than `max_age_s`
starts one refresh in the background; the caller never waits for the store.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)


class StoreFigures:
    def __init__(self, read: Callable[[], dict[str, int]], max_age_s: float = 5.0) -> None:
        self._read = read
        self.max_age_s = max_age_s
        self._figures: dict[str, int] = {}
        self._read_at = float("-inf")
        self._refreshing = threading.Lock()

    def latest(self) -> dict[str, int]:
        """The figures last read (empty before the first read, or when the last one failed:
        object storage unreachable); starts a refresh when they are stale."""
        if time.monotonic() - self._read_at > self.max_age_s and self._refreshing.acquire(blocking=False):
            threading.Thread(target=self._refresh, name="codemem-store-figures", daemon=True).start()
        return self._figures

    def _refresh(self) -> None:
        try:
            self._figures = self._read()
        except Exception:  # noqa: BLE001 - the health answer says what it could not read
            log.warning("store figures unavailable for /health", exc_info=True)
            self._figures = {}
        finally:
            self._read_at = time.monotonic()
            self._refreshing.release()
