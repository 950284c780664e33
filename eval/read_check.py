"""What it costs a read to see other processes' commits: LanceDB's version check against
the shared commit count (issue 18, `--workers 2`).

    python -m eval.read_check [--commits 1500] [--reads 200] [--out FILE.json]

A store gets `--commits` single-row commits, compacted with every version kept (a steady
stream of Adds leaves a few thousand versions within the two minutes compaction keeps
them), so only the version count is large. The same one-row read is then timed three
ways, by CPU and wall time per read:

- `store`: through `Store`, which compares the shared commit count first (nobody else
  committed, so it checks nothing out);
- `lancedb_interval_0`: a handle opened with `read_consistency_interval` 0, which asks
  for the latest version at every read (what several workers used before the count);
- `lancedb_no_check`: a handle that never checks (`read_consistency_interval` None).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import cast

import lancedb
from lancedb.background_loop import LOOP
from lancedb.table import LanceTable

from codemem.store.lance import Store
from codemem.store.schema import ITEMS_TABLE, Row
from eval._provenance import finish, provenance

USER = "u" * 32


def _row(i: int) -> Row:
    return Row(id=f"m_{i}", user_key=USER, user_id="u", session_key="s" * 32, session_id="s",
               request_key=f"{i:032d}", kind="message", position=0, role="user", text=f"module_{i} failed",
               refs="", content="", metadata="{}", created_at=0, timestamp=None)


def per_read(read: Callable[[], object], reads: int) -> dict[str, float]:
    read()  # warm
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(reads):
        read()
    return {"cpu_ms": round(1000 * (time.process_time() - cpu) / reads, 3),
            "wall_ms": round(1000 * (time.perf_counter() - wall) / reads, 3)}


def measure(data_dir: str, commits: int, reads: int) -> dict[str, object]:
    store = Store(data_dir, "read-check", 4)
    for i in range(commits):
        store.append([_row(i)])
    store.optimize(keep_versions_for=timedelta(days=1))  # few fragments, every version kept
    where = f"user_key = '{USER}' AND request_key = '{0:032d}'"

    def lancedb_read(interval: timedelta | None) -> Callable[[], object]:
        table = cast(LanceTable, lancedb.connect(data_dir, read_consistency_interval=interval).open_table(ITEMS_TABLE))
        return lambda: LOOP.run(table._table.query().where(where).select(["id"]).limit(1).to_list())

    return {
        "versions": len(store.table.list_versions()),
        "rows": store.count(),
        "per_read": {
            "store": per_read(lambda: store.exists(where), reads),
            "lancedb_interval_0": per_read(lancedb_read(timedelta(0)), reads),
            "lancedb_no_check": per_read(lancedb_read(None), reads),
        },
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--commits", type=int, default=1500)
    p.add_argument("--reads", type=int, default=200)
    p.add_argument("--out", help="also write the figures, with their provenance, to this JSON file")
    args = p.parse_args()
    prov = provenance("eval.read_check")
    with tempfile.TemporaryDirectory(prefix="codemem-readcheck-") as tmp:
        result = measure(str(Path(tmp) / "data"), args.commits, args.reads)
    print(json.dumps(result, indent=2))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps({"provenance": finish(prov), **result}, indent=2) + "\n")


if __name__ == "__main__":
    main()
