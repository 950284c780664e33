"""CPU time of one single-message Add in-process, whole and in the store's writes (issue 18).

    python -m eval.add_cpu --store /tmp/cm-20k --out eval/results/tmp/add-cpu.json

`--store` is a data directory as `eval.search_cpu` builds it (its rows stay untouched: the Adds
go to a copy). Adds are those of `eval.load --single-message`: the first message of a real
chunk with a mark, five Adds to a session, one after another, compacted in the background as
the server does (`--compact-interval 0`: never). CPU is the process's (`resource.getrusage`, LanceDB's threads
included) per Add; each store write (`append`, `upsert`, `delete_ids`) is timed too, CPU and
wall, as the Adds run one at a time, and with `--parts` each compaction round (`optimize`,
in the background: its CPU overlaps the Adds').
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from codemem.config import Settings
from codemem.contract.types import AddRequest
from codemem.memory import Memory
from eval._paths import SWE_LITE
from eval._provenance import finish, provenance
from eval.latency import load_sessions
from eval.load import chunks_of, marked
from eval.search_cpu import USER, cpu_s

WRITES = ("append", "upsert", "delete_ids")


def timed(obj: object, name: str, totals: dict[str, list[float]]) -> None:
    """Wrap `obj.name` so each call adds [calls, cpu s, wall s] to `totals[name]`."""
    fn: Callable[..., Any] = getattr(obj, name)

    def wrapper(*a: Any) -> Any:
        c0, t0 = cpu_s(), time.perf_counter()
        try:
            return fn(*a)
        finally:
            t = totals[name]
            t[0] += 1
            t[1] += cpu_s() - c0
            t[2] += time.perf_counter() - t0

    setattr(obj, name, wrapper)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", type=Path, required=True, help="data directory to copy (eval.search_cpu builds one)")
    p.add_argument("--adds", type=int, default=150)
    p.add_argument("--compact-interval", type=float, default=Settings().compact_interval_s,
                   help="seconds between compaction checks, as the server (0: never)")
    p.add_argument("--parts", action="store_true", help="time each compaction round too")
    p.add_argument("--out", type=Path, default=Path("eval/results/tmp/add-cpu.json"))
    args = p.parse_args(argv)
    prov = provenance("eval.add_cpu", argv)
    pool = chunks_of(load_sessions(SWE_LITE / "trajectories.tar.xz", 200))
    with tempfile.TemporaryDirectory(prefix="add-cpu-") as tmp:
        data = Path(tmp) / "data"
        shutil.copytree(args.store, data)
        mem = Memory(Settings.from_env({}, data_dir=str(data), compact_interval_s=args.compact_interval))
        totals: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
        try:
            mem.warm_up()
            rows_before = mem.store.stats()
            for name in WRITES:
                timed(mem.store, name, totals)
            if args.parts:
                timed(mem.store, "optimize", totals)
            c0, t0 = cpu_s(), time.perf_counter()
            for n in range(args.adds):
                body = {"user_id": USER, "session_id": f"addcpu-{n // 5}", "request_id": f"addcpu-{n}",
                        "messages": marked(pool[(n * 7919) % len(pool)], f"m{n}", single=True)}
                mem.add(msgspec.convert(body, AddRequest))
            cpu, wall = cpu_s() - c0, time.perf_counter() - t0
            rows_after = mem.store.stats()
        finally:
            mem.close()
    per = {name: {"calls": int(t[0]), "cpu_ms_per_add": round(t[1] / args.adds * 1000, 2),
                  "wall_ms_per_add": round(t[2] / args.adds * 1000, 2)} for name, t in totals.items()}
    result = {"provenance": finish(prov), "store_before": rows_before, "store_after": rows_after,
              "cpu_ms_per_add": round(cpu / args.adds * 1000, 2), "wall_ms_per_add": round(wall / args.adds * 1000, 2),
              "timed": per}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "provenance"}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
