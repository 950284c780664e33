"""eval.thread_cpu: a thread's CPU is counted under its name, and only what it used in the window."""

from __future__ import annotations

import os
import threading
import time

from eval.thread_cpu import cpu_by_name, thread_ticks


def _spin(stop: threading.Event) -> None:
    while not stop.is_set():
        sum(range(1000))


def test_a_busy_thread_counts_under_the_processes_thread_name() -> None:
    name = thread_ticks(os.getpid())[str(threading.get_native_id())][0]
    stop = threading.Event()
    busy = threading.Thread(target=_spin, args=(stop,))
    busy.start()
    try:
        start = time.monotonic()
        used = cpu_by_name(os.getpid(), 0.6)
        # the window ends when the last thread's ticks are read, which can be well after the
        # sleep when a full suite has left many threads behind and the spinner holds the GIL
        window = time.monotonic() - start
    finally:
        stop.set()
        busy.join()
    assert 0.3 <= used[name] <= window * (os.cpu_count() or 1) + 0.1


def test_cpu_used_before_the_window_is_not_counted() -> None:
    stop = threading.Event()
    busy = threading.Thread(target=_spin, args=(stop,))
    busy.start()
    time.sleep(0.5)
    stop.set()
    busy.join()
    assert sum(cpu_by_name(os.getpid(), 0.2).values()) < 0.15
