"""Ingest throughput through the HTTP Add path: all 300 shared trajectories, then searches.

    python -m eval.load.ingest [--data DIR (default eval/_paths.py SWE_LITE)] [--chunk 34]
                                [--concurrency 8] [--limit N] [--out eval/results/ingest.json]

Each trajectory is rendered with codemem's Claude Code renderer and sent as Adds of
`--chunk` messages, one session_id per trajectory, `--concurrency` sessions at a time (each
session's chunks in order), to a real `codemem serve` on a temporary data directory with
default settings. Reports wall time, messages/s, Add latency per chunk, then Search latency
for every related task's problem statement (top_k 100) and the experience cards stored.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import httpx

from eval._data import load_queries, load_sessions
from eval._paths import RESULTS, SWE_LITE
from eval._provenance import provenance, write_result
from eval._server import running_server
from eval._stats import summary_ms

DEFAULT_DATA = SWE_LITE


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--chunk", type=int, default=34)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--limit", type=int, default=None, help="only the first N trajectories")
    ap.add_argument("--out", type=Path, default=RESULTS / "ingest.json")
    args = ap.parse_args(argv)
    prov = provenance("eval.load.ingest", argv)

    sessions = load_sessions(args.data / "trajectories.tar.xz", args.limit)
    n_messages = sum(len(m) for _, m in sessions)
    queries = load_queries(args.data / "related_tasks.jsonl")
    print(f"{len(sessions)} trajectories, {n_messages} messages, chunk {args.chunk}, concurrency {args.concurrency}")

    add_ms: list[float] = []
    errors: dict[int, int] = {}
    with running_server() as srv, httpx.Client(base_url=srv.url, timeout=600) as client:
        user = "bench"

        def send(session: tuple[str, list[dict]]) -> None:
            sid, msgs = session
            for start in range(0, len(msgs), args.chunk):
                body = {"request_id": f"{sid}:{start}", "user_id": user, "session_id": sid,
                        "messages": msgs[start : start + args.chunk]}
                t0 = time.perf_counter()
                r = client.post("/add", json=body)
                add_ms.append((time.perf_counter() - t0) * 1000)
                if r.status_code != 200:
                    errors[r.status_code] = errors.get(r.status_code, 0) + 1

        t0 = time.perf_counter()
        with ThreadPoolExecutor(args.concurrency) as pool:
            list(pool.map(send, sessions))
        wall = time.perf_counter() - t0

        search_ms: list[float] = []
        sizes: list[int] = []
        for q in queries:
            t1 = time.perf_counter()
            r = client.post("/search", json={"query": q, "user_id": user, "top_k": 100})
            search_ms.append((time.perf_counter() - t1) * 1000)
            sizes.append(sum(len(h["content"]) if isinstance(h["content"], str) else 0 for h in r.json()["data"]))
        data_dir = srv.data_dir
        result = {
            "provenance": {},
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "cores": os.cpu_count(),
            "trajectories": len(sessions),
            "messages": n_messages,
            "chunk": args.chunk,
            "concurrency": args.concurrency,
            "adds": len(add_ms),
            "errors": errors,
            "wall_s": round(wall, 1),
            "messages_per_s": round(n_messages / wall, 1),
            "add_ms": summary_ms([v / 1000 for v in add_ms], digits=0),
            "search_ms": summary_ms([v / 1000 for v in search_ms], digits=0),
            "search_chars_returned": {"p50": int(statistics.median(sizes)), "max": max(sizes)},
        }
        result["cards"] = card_stats(data_dir)
    write_result(args.out, result, prov)
    print(json.dumps(result, indent=2))


def card_stats(data_dir: str) -> dict[str, int]:
    """Cards stored per session, read from the data directory the server wrote."""
    import lancedb

    table = lancedb.connect(data_dir).open_table("items")
    cards = table.search().where("kind = 'card'").select(["session_id", "text"]).limit(1_000_000).to_list()
    lengths = sorted(len(c["text"]) for c in cards)
    return {
        "cards": len(cards),
        "sessions_with_card": len({c["session_id"] for c in cards}),
        "chars_p50": lengths[len(lengths) // 2] if lengths else 0,
        "chars_max": lengths[-1] if lengths else 0,
        "steps": table.count_rows("kind = 'step'"),
    }


if __name__ == "__main__":
    main()
