"""The event loop's thread first: every other thread of the server process runs at a higher
nice value, so the thread that accepts requests, refuses those over the admission bounds and
sends answers gets a core as soon as it wakes.

Under saturation on 2 cores the loop thread used ~12% of a core, yet a 503 (decided on the
loop, before any work) took p95 61-149 ms by the server's own log: the loop waited for a core
behind LanceDB's runtime threads, the worker threads and the model. With the others at nice
10 the same load got its 503s in p95 28-33 ms and answered more of what it admitted (issue
18; `eval/README.md`, "Shedding under saturation"). The nice value is relative: on an idle
machine it changes nothing.

Linux only (a thread's nice value is set by its id through `setpriority`); threads are
created as the server runs (anyio's workers, LanceDB's runtime, the compactor), so they are
looked for again every `interval_s`. A nice value once raised cannot be lowered without
privilege, so a thread already at or above the value is left alone.
"""

from __future__ import annotations

import logging
import os
import sys
import threading

log = logging.getLogger("codemem.api")

TASKS = "/proc/self/task"


class LoopPrecedence:
    """Raises the nice value of every thread of this process but the one that starts it
    (the event loop's), now and every `interval_s` for threads started since."""

    def __init__(self, nice: int, interval_s: float = 1.0) -> None:
        self.nice = nice
        self.interval_s = interval_s
        self._loop_thread = threading.get_native_id()
        self._done: set[int] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @staticmethod
    def supported() -> bool:
        return sys.platform.startswith("linux") and os.path.isdir(TASKS)

    def start(self) -> None:
        """From the event loop's thread; does nothing where nice is 0 or not supported."""
        if self.nice <= 0 or not self.supported():
            return
        self._loop_thread = threading.get_native_id()
        self.renice_new()
        log.debug("threads other than the event loop's run at nice %d", self.nice)
        self._thread = threading.Thread(target=self._run, name="codemem-priority", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def renice_new(self) -> int:
        """Set the nice value of the threads not seen before; how many were changed."""
        changed = 0
        try:
            tids = [int(t) for t in os.listdir(TASKS)]
        except OSError:
            return 0
        self._done.intersection_update(tids)  # ended threads' ids may be given out again
        for tid in tids:
            if tid == self._loop_thread or tid in self._done:
                continue
            self._done.add(tid)
            try:
                if os.getpriority(os.PRIO_PROCESS, tid) < self.nice:
                    os.setpriority(os.PRIO_PROCESS, tid, self.nice)
                    changed += 1
            except OSError:  # the thread ended meanwhile
                continue
        return changed

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.renice_new()
