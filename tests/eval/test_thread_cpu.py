"""eval.thread_cpu: a thread's CPU is counted under its name, and only what it used in the window.

The window is `cpu_by_name`'s wait between its two reads of /proc. The tests put known work
in it instead of a sleep: threads named for the test spin until their own CPU clock has
advanced by a set amount, so the figures to expect are measured CPU, whatever the load on the
machine and however long the window takes in wall time.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from eval import thread_cpu
from eval.thread_cpu import cpu_by_name

# Each of the two reads of a thread's ticks truncates to a clock tick (10 ms at the usual
# 100 Hz), and the result is rounded to 10 ms: a thread's figure is within 3 ticks of its use.
TICK_S = 1 / os.sysconf("SC_CLK_TCK")


class Burner:
    """A thread that the kernel knows by `name`, idle (blocked) except when asked to use CPU."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._asks: queue.Queue[float | None] = queue.Queue()
        self._used: queue.Queue[float] = queue.Queue()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self._used.get(timeout=30)  # named

    def burn(self, cpu_s: float) -> float:
        """Spin until this thread has used `cpu_s` of CPU; returns what it used, by its own clock."""
        self._asks.put(cpu_s)
        return self._used.get(timeout=120)

    def close(self) -> None:
        self._asks.put(None)
        self._thread.join(timeout=30)

    def _run(self) -> None:
        # The name /proc shows for this thread (otherwise the one every Python thread shares).
        Path(f"/proc/self/task/{threading.get_native_id()}/comm").write_text(self.name)
        self._used.put(0.0)
        while (cpu_s := self._asks.get()) is not None:
            start = time.thread_time()
            while time.thread_time() - start < cpu_s:
                sum(range(1000))
            self._used.put(time.thread_time() - start)


@pytest.fixture
def burners() -> Iterator[Callable[[str], Burner]]:
    made: list[Burner] = []

    def make(name: str) -> Burner:
        made.append(Burner(name))
        return made[-1]

    yield make
    for burner in made:
        burner.close()


def measured(monkeypatch: pytest.MonkeyPatch, window: Callable[[], None]) -> dict[str, float]:
    """`cpu_by_name` of this process over a window in which `window()` runs (not a sleep)."""
    monkeypatch.setattr(thread_cpu, "time", SimpleNamespace(sleep=lambda seconds: window()))
    return cpu_by_name(os.getpid(), 1.0)


def test_cpu_used_in_the_window_counts_under_the_threads_name(
        monkeypatch: pytest.MonkeyPatch, burners: Callable[[str], Burner]) -> None:
    """Threads are grouped by the name the kernel holds for them, their CPU in the window
    summed; an idle thread is not listed; the busiest name comes first."""
    # Made least busy first: /proc lists threads as they were made, so the order is the sort's.
    little, idle, first, second = burners("cm-little"), burners("cm-idle"), burners("cm-busy"), burners("cm-busy")
    used_s: dict[str, float] = {}

    def window() -> None:
        used_s["cm-busy"] = first.burn(0.2) + second.burn(0.2)
        used_s["cm-little"] = little.burn(0.1)

    used = measured(monkeypatch, window)
    assert used["cm-busy"] == pytest.approx(used_s["cm-busy"], abs=2 * 3 * TICK_S)  # two threads' error
    assert used["cm-little"] == pytest.approx(used_s["cm-little"], abs=3 * TICK_S)
    assert idle.name not in used
    assert list(used.values()) == sorted(used.values(), reverse=True)


def test_cpu_used_before_the_window_is_not_counted(
        monkeypatch: pytest.MonkeyPatch, burners: Callable[[str], Burner]) -> None:
    """A thread that used CPU before the window and none in it is not listed, while one
    that used CPU in it is: what is counted is the difference between the two reads."""
    before, during = burners("cm-before"), burners("cm-during")
    assert before.burn(0.3) >= 0.3
    used_s: list[float] = []
    used = measured(monkeypatch, lambda: used_s.append(during.burn(0.1)))
    assert "cm-before" not in used, used
    assert used["cm-during"] == pytest.approx(used_s[0], abs=3 * TICK_S)


def test_a_thread_started_in_the_window_counts_from_zero(
        monkeypatch: pytest.MonkeyPatch, burners: Callable[[str], Burner]) -> None:
    """A thread missing from the first read (it started later) counts all it used."""
    used_s: list[float] = []
    used = measured(monkeypatch, lambda: used_s.append(burners("cm-new").burn(0.1)))
    assert used["cm-new"] == pytest.approx(used_s[0], abs=3 * TICK_S)
