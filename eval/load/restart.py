"""Search right after a restart on a store left un-compacted, against a compacted one.

    python -m eval.load.restart                      # all 300 trajectories, 62 task queries (~8 min on 2 cores)
    python -m eval.load.restart --trajectories 12 --tail 4 --queries 4 --out /tmp/restart   # a smoke run

A bulk import stopped right after its last write leaves loose fragments and rows outside the
full-text index, and a server that starts on that store sees no new commit to count. This
replays that state and measures, with the real server over HTTP:

1. the store as such an import leaves it: all but the last `--tail` trajectories Added with
   the compactor on and settled, then the tail Added with it off (`CODEMEM_COMPACT_INTERVAL_S=0`),
   and the server stopped at once;
2. `uncompacted`: a server with the compactor off on a copy of that store: the cost of
   never compacting;
3. `restart`: a server with default settings on the store: Searches start the moment it is
   healthy and run while its start-up compaction does (`during`: nobody waits on it), then the
   query set again once `/health` says the store is compacted (`after`);
4. `compacted`: a fresh server on the now compacted store: the reference figure.

Target: `after` p50 within 1.3x of `compacted` p50. Writes `<out>.json` and `<out>.md`.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from eval._paths import RESULTS
from eval._provenance import header, provenance, write_result
from eval._server import Server, post_retrying, running_server
from eval._stats import summary_ms
from eval.replay.data import (
    DEFAULT_DATA,
    Condition,
    Trajectory,
    iter_trajectories,
    load_tasks,
    trajectory_repos,
)
from eval.replay.ingest import Plan, ingest, wait_settled

USER = "all"
TOP_K = 100
OFF = {"CODEMEM_COMPACT_INTERVAL_S": "0"}


def log(msg: str) -> None:
    print(f"[restart {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def queries_of(data: Path, n_queries: int | None) -> list[str]:
    """The labelled tasks' problem statements, as the replay searches them."""
    return [t.query for t in load_tasks(data)][:n_queries]


def plan_of(trajectories: dict[str, Trajectory], ids: Sequence[str]) -> Plan:
    """One memory (USER) holding these trajectories, Added as the replay Adds them."""
    return Plan([], [Condition(USER, "noisy-all", tuple(ids), ())], trajectories)


def search_all(srv: Server, queries: Sequence[str]) -> list[float]:
    """Each query once, sequentially; seconds, measured by the client."""
    out = []
    with httpx.Client(timeout=300.0, trust_env=False) as client:
        for q in queries:
            r, dt = post_retrying(client, srv, "/search", {"user_id": USER, "query": q, "top_k": TOP_K})
            r.raise_for_status()
            out.append(dt)
    return out


def health(srv: Server) -> dict[str, object]:
    return httpx.get(srv.url + "/health", timeout=30, trust_env=False).json()


def build_store(data_dir: str, data: Path, n_trajectories: int | None, tail: int, chunk: int) -> dict[str, object]:
    ids = sorted(trajectory_repos(data))[:n_trajectories]
    trajectories = {t.instance_id: t for t in iter_trajectories(data, "default", set(ids))}
    head, rest = ids[: len(ids) - tail], ids[len(ids) - tail:]
    info: dict[str, object] = {"trajectories": len(ids), "tail": len(rest)}
    with running_server(data_dir) as srv:
        rep = ingest(srv, plan_of(trajectories, head), chunk, concurrency=8)
        info["bulk_ingest_s"], info["bulk_errors"] = round(rep.wall_s, 1), len(rep.errors)
        info["settled"] = wait_settled(data_dir, 300)
    with running_server(data_dir, env=OFF) as srv:
        rep = ingest(srv, plan_of(trajectories, rest), chunk, concurrency=8)
        info["tail_ingest_s"], info["tail_errors"] = round(rep.wall_s, 1), len(rep.errors)
        info["left"] = {k: health(srv)[k] for k in ("fragments", "small_fragments", "unindexed_rows")}
    return info


def measure(data_dir: str, queries: list[str], timeout_s: float) -> dict[str, object]:
    result: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="cmbench-restart-") as copy:
        shutil.copytree(data_dir, copy, dirs_exist_ok=True)
        with running_server(copy, env=OFF) as srv:
            result["uncompacted"] = {"store": health(srv), **summary_ms(search_all(srv, queries), digits=1)}
    log(f"uncompacted: {result['uncompacted']}")

    with running_server(data_dir) as srv:
        ready = time.monotonic()
        at_start = health(srv)
        during: list[float] = []
        compacted_after_s = None
        while time.monotonic() - ready < timeout_s:
            during.extend(search_all(srv, queries[:5]))
            h = health(srv)
            if int(h["compactions"]) >= 1 and h["unindexed_rows"] == 0:  # type: ignore[call-overload]
                compacted_after_s = round(time.monotonic() - ready, 1)
                break
        after = search_all(srv, queries)
        result["restart"] = {"store_at_start": at_start, "compacted_after_s": compacted_after_s,
                             "during": summary_ms(during, digits=1), "after": summary_ms(after, digits=1), "store_after": health(srv)}
    log(f"restart: {result['restart']}")

    with running_server(data_dir) as srv:
        result["compacted"] = {"store": health(srv), **summary_ms(search_all(srv, queries), digits=1)}
    log(f"compacted: {result['compacted']}")
    after_p50 = result["restart"]["after"]["p50"]  # type: ignore[index]
    ref_p50 = result["compacted"]["p50"]  # type: ignore[index]
    result["after_vs_compacted_p50"] = round(after_p50 / ref_p50, 2) if after_p50 and ref_p50 else None
    return result


def markdown(result: dict[str, object]) -> str:
    m = result["measured"]
    rows = [
        ("un-compacted store, compactor off", m["uncompacted"], m["uncompacted"]["store"]),  # type: ignore[index]
        ("restart, first Searches once healthy", m["restart"]["during"], m["restart"]["store_at_start"]),  # type: ignore[index]
        ("restart, after the start-up compaction", m["restart"]["after"], m["restart"]["store_after"]),  # type: ignore[index]
        ("fresh server on the compacted store", m["compacted"], m["compacted"]["store"]),  # type: ignore[index]
    ]
    lines = [
        f"# Search after a restart on an un-compacted store\n\n`{result['provenance']['command']}` "  # type: ignore[index]
        f"({header(result['provenance'])})\n",  # type: ignore[arg-type]
        "| phase | searches | p50 ms | p95 ms | max ms | fragments | small fragments | unindexed rows |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, f, store in rows:
        lines.append(f"| {name} | {f['n']} | {f['p50']} | {f['p95']} | {f['max']} | {store['fragments']} "
                     f"| {store['small_fragments']} | {store['unindexed_rows']} |")
    at_start = m["restart"]["store_at_start"]  # type: ignore[index]
    when = ("before the server was healthy (the compaction starts with the server, the model takes longer to load)"
            if at_start["compactions"] >= 1 and at_start["unindexed_rows"] == 0
            else f"{m['restart']['compacted_after_s']} s after the server was healthy, while the first Searches ran")  # type: ignore[index]
    lines.append(f"\nThe start-up compaction was done {when}. "
                 f"p50 after it / compacted p50 = **{m['after_vs_compacted_p50']}** (target <= 1.3).\n")  # type: ignore[index]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(prog="python -m eval.load.restart", description=__doc__.split("\n")[0])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the swe-contextbench-lite folder")
    p.add_argument("--trajectories", type=int, default=None, help="only the first N trajectories (default all)")
    p.add_argument("--tail", type=int, default=20, help="trajectories Added with the compactor off at the end")
    p.add_argument("--queries", type=int, default=None, help="only the first N task queries (default all)")
    p.add_argument("--chunk", type=int, default=34, help="messages per Add")
    p.add_argument("--compact-timeout", type=float, default=300.0, help="longest wait for the start-up compaction")
    p.add_argument("--out", type=Path, default=RESULTS / "restart")
    args = p.parse_args(argv)
    queries = queries_of(args.data, args.queries)
    prov = provenance("eval.load.restart", argv)
    with tempfile.TemporaryDirectory(prefix="cmbench-restart-store-") as store:
        built = build_store(store, args.data, args.trajectories, args.tail, args.chunk)
        log(f"store: {built}")
        measured = measure(store, queries, args.compact_timeout)
    result: dict[str, object] = {"store": built, "measured": measured}
    write_result(f"{args.out}.json", result, prov, markdown=markdown, indent=1)
    print(markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
