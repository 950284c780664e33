"""CPU time of a running process by thread name over a window: where a server's CPU goes
under load (issue 18), between LanceDB's own threads and Python's.

    python -m eval.thread_cpu SERVER_PID --seconds 15 [--out FILE.json]

Reads `/proc/PID/task/*/stat` before and after the window; threads are grouped by the name
the kernel holds for them (`lancedb-tokio-w`: LanceDB's query and write runtime,
`lance-cpu`: Lance's CPU pool, `lance_backgroun`: its background tasks, `python`: every
Python thread, so the event loop, the worker threads and the model that runs in them).
Pair it with `py-spy record -p PID -f raw --nonblocking` to see which Python code the
`python` share is (`eval/README.md`, "Where the time goes").
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import Counter
from pathlib import Path

from eval._provenance import finish, provenance


def thread_ticks(pid: int) -> dict[str, tuple[str, int]]:
    """{thread id: (thread name, user + system clock ticks so far)} of a live process."""
    ticks = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except OSError:  # the thread ended meanwhile
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        ticks[task.name] = (name, int(fields[11]) + int(fields[12]))
    return ticks


def cpu_by_name(pid: int, seconds: float) -> dict[str, float]:
    """CPU seconds each thread name used during the next `seconds`, most first (threads
    that started within the window count from zero)."""
    before = thread_ticks(pid)
    time.sleep(seconds)
    used: Counter[str] = Counter()
    for tid, (name, ticks) in thread_ticks(pid).items():
        used[name] += ticks - before.get(tid, (name, 0))[1]
    hz = os.sysconf("SC_CLK_TCK")
    return {name: round(t / hz, 2) for name, t in used.most_common() if t}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("pid", type=int)
    p.add_argument("--seconds", type=float, default=15.0)
    p.add_argument("--out", help="also write the figures, with their provenance, to this JSON file")
    args = p.parse_args()
    prov = provenance("eval.thread_cpu")
    used = cpu_by_name(args.pid, args.seconds)
    total = sum(used.values())
    for name, s in used.items():
        print(f"{name:20s} {s:7.2f} s {100 * s / total:5.1f}%")
    print(f"{'all':20s} {total:7.2f} s in {args.seconds:g} s of wall time")
    if args.out:
        result = {"provenance": finish(prov), "pid": args.pid, "seconds": args.seconds,
                  "cpu_s_by_thread_name": used, "cpu_s": round(total, 2)}
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
