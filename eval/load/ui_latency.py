"""Response times of the /ui pages over a memory of real experiences.

    python -m eval.load.ui_latency                         # 300 experiences (all of SWE-ContextBench Lite)
    python -m eval.load.ui_latency --sessions 30 --requests 20 --out eval/results/tmp/ui_latency.json

One `codemem serve` (default settings, no API key) and one user_id. Each of the first
`--sessions` real Claude Code transcripts is Added as one experience (chunks of `--chunk`
messages), then the benchmark waits until the compactor has folded the rows into the
indexes (at most `--settle-s`), and requests each page `--requests` times, one at a time,
end to end over HTTP (the body read whole):

- memories: `/ui/` (every user's counts and storage, read from the whole table);
- search: `/ui/search` with a new query each time (the related tasks' problem statements),
  which runs a Search (top_k 30) and renders its cards;
- more: the second page of a kept answer (no Search);
- listing: `/ui/search` without a query (the user's cards, newest first);
- experience: `/ui/experience` of a random stored session (card, steps, highlighted patch);
- messages: the same with its raw messages.

The target is p95 <= 300 ms for every page at 300 experiences.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

os.environ.setdefault("LANCE_LOG", "error")

import httpx  # noqa: E402

from eval._data import load_queries, load_sessions  # noqa: E402
from eval._paths import RESULTS  # noqa: E402
from eval._provenance import provenance, write_result  # noqa: E402
from eval._server import running_server  # noqa: E402
from eval._stats import summary_ms  # noqa: E402

USER = "repo:github.com/bench/ui-latency"
TARGET_P95_MS = 300.0


def ingest(client: httpx.Client, sessions: list[tuple[str, list[dict[str, object]]]], chunk: int) -> float:
    t0 = time.perf_counter()
    for name, messages in sessions:
        for i in range(0, len(messages), chunk):
            body = {"request_id": f"{name}-{i}", "user_id": USER, "session_id": name,
                    "messages": messages[i:i + chunk]}
            r = client.post("/add", json=body, timeout=300)
            r.raise_for_status()
    return time.perf_counter() - t0


def settle(client: httpx.Client, timeout_s: float) -> dict[str, object]:
    """Wait until nothing is left outside the indexes (or the timeout); the last health."""
    deadline = time.monotonic() + timeout_s
    health: dict[str, object] = client.get("/health").json()
    while time.monotonic() < deadline and health.get("unindexed_rows"):
        time.sleep(2)
        health = client.get("/health").json()
    return health


def timed(client: httpx.Client, url: str) -> tuple[float, httpx.Response]:
    t0 = time.perf_counter()
    r = client.get(url)
    elapsed = time.perf_counter() - t0
    r.raise_for_status()
    return elapsed, r


def measure(client: httpx.Client, sessions: list[str], queries: list[str], requests: int,
            rng: random.Random) -> dict[str, list[float]]:
    user = quote(USER)
    times: dict[str, list[float]] = {k: [] for k in ("memories", "search", "more", "listing", "experience", "messages")}

    def run(page: str, url: Callable[[int], str]) -> None:
        for i in range(requests):
            times[page].append(timed(client, url(i))[0])

    run("memories", lambda i: "/ui/")
    tokens: list[tuple[str, str]] = []
    for i in range(requests):
        q = queries[i % len(queries)][:2000]
        elapsed, r = timed(client, f"/ui/search?user_id={user}&q={quote(q)}")
        times["search"].append(elapsed)
        m = re.search(r"token=([A-Za-z0-9_-]+)", r.text)
        if m:
            tokens.append((q, m.group(1)))
    run("more", lambda i: (f"/ui/search?user_id={user}&q={quote(tokens[i % len(tokens)][0])}"
                           f"&token={tokens[i % len(tokens)][1]}&page=2") if tokens else "/ui/")
    run("listing", lambda i: f"/ui/search?user_id={user}")
    run("experience", lambda i: f"/ui/experience?user_id={user}&session_id={quote(rng.choice(sessions))}")
    run("messages", lambda i: f"/ui/experience?user_id={user}&session_id={quote(rng.choice(sessions))}&messages=true")
    return times


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=300, help="experiences stored (real transcripts, one each)")
    ap.add_argument("--chunk", type=int, default=50, help="messages per Add")
    ap.add_argument("--requests", type=int, default=50, help="requests per page")
    ap.add_argument("--settle-s", type=float, default=300.0, help="longest wait for the compactor")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=RESULTS / "ui_latency.json")
    args = ap.parse_args(argv)
    prov = provenance("eval.load.ui_latency", argv)
    sessions = load_sessions(limit=args.sessions)
    queries = load_queries()
    rng = random.Random(args.seed)
    with running_server() as srv, httpx.Client(base_url=srv.url, timeout=120) as client:
        ingest_s = ingest(client, sessions, args.chunk)
        health = settle(client, args.settle_s)
        times = measure(client, [name for name, _ in sessions], queries, args.requests, rng)
    pages = {page: summary_ms(values, 1) for page, values in times.items()}
    worst = max(float(p["p95"] or 0.0) for p in pages.values())
    result = {
        "experiences": len(sessions), "messages": sum(len(m) for _, m in sessions),
        "ingest_s": round(ingest_s, 1), "health_before_pages": health,
        "requests_per_page": args.requests, "pages_ms": pages,
        "worst_p95_ms": worst, "target_p95_ms": TARGET_P95_MS, "meets_target": worst <= TARGET_P95_MS,
    }
    write_result(args.out, result, prov)
    for page, s in pages.items():
        print(f"{page:11s} p50 {s['p50']:7.1f} ms  p95 {s['p95']:7.1f} ms  max {s['max']:7.1f} ms", file=sys.stderr)
    print(f"{len(sessions)} experiences; worst p95 {worst:.1f} ms (target {TARGET_P95_MS:.0f}); wrote {args.out}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
