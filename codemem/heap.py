"""Handing freed memory back to the system.

glibc's malloc keeps the memory an Add freed (parsed messages, Arrow batches, LanceDB's
commit buffers) in its arenas for the next allocation, spread over one arena per thread
that allocated, and returns little of it by itself: profiled in-process, a `malloc_trim`
after an ingest of a few hundred sessions gave back 0.1 to 0.2 GB. It gives the free pages back. It is
called by the writer's housekeeping when Adds pause, and now and then while they keep
coming (`writing.session_writer`). Elsewhere than glibc it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import threading
import time
from collections.abc import Callable


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    try:
        trim = ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):  # not glibc
        return None
    if trim is not None:
        trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def release() -> bool:
    """Give the allocator's free memory back to the system; False where that cannot be done."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


class Releaser:
    """When to `release`: once activity has paused for `quiet_s`, and every `every_s` while it
    goes on (a trim walks every arena, so it is not run after each write)."""

    def __init__(self, quiet_s: float = 2.0, every_s: float = 30.0,
                 clock: Callable[[], float] = time.monotonic, release: Callable[[], bool] = release) -> None:
        self.quiet_s = quiet_s
        self.every_s = every_s
        self._clock = clock
        self._release = release
        self._last_active = self._last_release = clock()
        self._owed = False
        self._lock = threading.Lock()

    def active(self) -> None:
        """Work that allocates happened (an Add)."""
        with self._lock:
            self._last_active = self._clock()
            self._owed = True

    def tick(self) -> bool:
        """Release if it is time to; True when it did."""
        now = self._clock()
        with self._lock:
            due = self._owed and (now - self._last_active >= self.quiet_s or now - self._last_release >= self.every_s)
            if not due:
                return False
            self._owed = now - self._last_active < self.quiet_s  # still busy: owed again later
            self._last_release = now
        return self._release()
