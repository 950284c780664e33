"""api.priority: the event loop's thread keeps its nice value, every other thread of the
process (those started later too) gets the configured one. Run in a child process: a nice
value once raised cannot be lowered without privilege."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from api.priority import LoopPrecedence

CHILD = """
import json, os, sys, threading, time
from api.priority import LoopPrecedence

def nice(tid): return os.getpriority(os.PRIO_PROCESS, tid)

base = nice(threading.get_native_id())

before, started, stop = threading.Thread(target=time.sleep, args=(3,)), threading.Event(), threading.Event()
before.start()
precedence = LoopPrecedence(int(sys.argv[1]), interval_s=0.05)
precedence.start()
ids = {}
def later():
    ids["later"] = threading.get_native_id()
    started.set()
    stop.wait(3)
after = threading.Thread(target=later)
after.start()
started.wait(3)
time.sleep(0.3)
out = {"base": base, "loop": nice(threading.get_native_id()), "before": nice(before.native_id), "later": nice(ids["later"])}
stop.set()
precedence.stop()
print(json.dumps(out))
"""


def _nice_values(nice: int) -> dict[str, int]:
    done = subprocess.run([sys.executable, "-c", CHILD, str(nice)], capture_output=True, text=True, timeout=60,
                          check=True)
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.mark.skipif(not LoopPrecedence.supported(), reason="per-thread nice values are set through Linux's /proc")
def test_every_thread_but_the_loops_runs_at_the_nice_value_even_one_started_later() -> None:
    got = _nice_values(5)
    base = got.pop("base")
    assert got == {"loop": base, "before": max(base, 5), "later": max(base, 5)}


def test_nice_zero_leaves_every_thread_as_it_was() -> None:
    got = _nice_values(0)
    base = got.pop("base")
    assert got == {"loop": base, "before": base, "later": base}
