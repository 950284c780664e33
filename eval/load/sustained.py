"""Sustained load and retry storms through the real server, as an evaluation platform sends them.

    python -m eval.load                       # 64 Add + 256 Search clients for 60 s
    python -m eval.load --seconds 20 --adders 16 --searchers 64
    python -m eval.load --adders 32 --searchers 64 --single-message --preload 20000 \
        --out eval/results/load-32x64.json     # the issue-18 targets' setting
    python -m eval.load --env CODEMEM_MAX_INFLIGHT_ADDS=8 --out eval/results/load-shed.json
    python -m eval.load --cold --seconds 30 --adders 32 --searchers 64 --single-message \
        --users 4 --adds-per-session 1 --out eval/results/load-cold.json   # issue 29's setting

0. `--cold`: the load starts as soon as the new server answers /health, before its model is
   loaded, on an empty data directory, with no preload: what an agent fleet on its first day
   sends. Acknowledged Adds are reported second by second from the first (`add_timeline`).
1. Preload: `--preload` messages of real trajectories into one user_id (`--preload-clients`
   at once; the trajectories are cycled under new session ids when more are asked for).
2. Sustained: `--adders` clients send 20-message chunks of real trajectories (each chunk's
   last message is a unique check mark; with `--single-message`, one real message each,
   the mark appended to it), `--searchers` clients (in a process of their own) send related tasks' problem statements
   (top_k 100), all at once for `--seconds`. A client answered 503 waits its Retry-After,
   as a platform does; `--users` spreads the clients over that many user ids, and
   `--adds-per-session` Adds go to each session. Reported per endpoint: statuses and transport errors, acknowledged
   throughput (answers 200 per second of wall time: the Add clients' own, the Search
   clients' own, each with its drain), latency p50/p95/p99 of the answers 200 only, and the shed rate (503 share, and the
   latency of the 503 answers: admission decides before any work, so it stays short);
   `server_ms` gives the same per route and status as the server's access log timed them
   (the client's own delays left out), and `server_cpu_ms_per_answer` the server's CPU time.
3. Zero lost: every acknowledged Add's mark is searched afterwards and must come back in a
   Search answer of its user.
4. Retry storm: `--storm` Adds each sent 3 times at once with one request_id; each mark must
   come back exactly once (no duplicate stored).
5. Crash: `--crash-clients` clients stream two-message Adds (each message carries the Add's
   mark); after `--crash-after` seconds the server gets SIGKILL, then is restarted on the
   same data dir with no repair step. Every Add answered 200 must come back whole, and no
   Add, answered or cut off, may come back half (one of its two messages).

Loopback only, bounded in time and count. Writes `eval/results/load.json`. The clients are
in `eval/load/clients.py`, the server's probes in `eval/_server.py`.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import multiprocessing
import os
import time
import uuid
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from eval._data import load_queries, load_sessions
from eval._paths import RESULTS, SWE_LITE
from eval._provenance import provenance, write_result
from eval._server import Server, ServerError, group_cpu_s, log_size, running_server, server_times
from eval.load.clients import (
    SHED,
    Tally,
    answers,
    back_off,
    chunks_of,
    found,
    found_per_user,
    marked,
    post,
    run_searchers,
    user_of,
    what_came_back,
)


async def sustained(srv: Server, args: argparse.Namespace, pool: list[list[dict]], queries: list[str]) -> dict[str, Any]:
    url = srv.url
    adds = Tally()
    acked: list[tuple[str, str, str]] = []  # (user_id, session_id, mark) of every Add answered 200
    acked_at: list[float] = []  # seconds from the phase's start at which each was answered
    t_start = time.monotonic()
    deadline = t_start + args.seconds
    limits = httpx.Limits(max_connections=args.adders + 8)

    async with httpx.AsyncClient(base_url=url, timeout=args.timeout, limits=limits) as client:
        async def adder(i: int) -> None:
            n = 0
            while time.monotonic() < deadline:
                mark = f"m{uuid.uuid4().hex[:16]}"
                session, user = f"load-{i}-{n // args.adds_per_session}", user_of(i, args.users)
                body = {"user_id": user, "session_id": session, "request_id": f"load-{i}-{n}",
                        "messages": marked(pool[(i * 7919 + n) % len(pool)], mark, args.single_message)}
                r = await post(client, "/add", body, adds)
                if r is not None and r.status_code == 200:
                    acked.append((user, session, mark))
                    acked_at.append(time.monotonic() - t_start)
                await back_off(r, deadline)
                n += 1

        t0, cpu0, log0 = time.perf_counter(), group_cpu_s(srv.pid), log_size(srv)
        # The Search clients run in a process of their own: decoding their large answers in
        # this event loop held every Add client's next request back (a client-side delay
        # that the figures would have charged to the server).
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as aside:
            searched = asyncio.get_running_loop().run_in_executor(
                aside, run_searchers, url, args.searchers, args.users, args.seconds, args.timeout, queries)
            await asyncio.gather(*(adder(i) for i in range(args.adders)))
            add_wall = time.perf_counter() - t0
            searches = await searched
        wall, cpu1 = time.perf_counter() - t0, group_cpu_s(srv.pid)
    # The server's CPU time per request answered: what a shared, noisy machine changes least.
    cpu = None if cpu0 is None or cpu1 is None else cpu1 - cpu0
    answered = sum(len(v) for t in (adds, searches) for v in t.latencies_s.values())
    timeline = [0] * (int(wall) + 1)
    for at in acked_at:
        timeline[min(int(at), len(timeline) - 1)] += 1
    return {"wall_s": round(wall, 1), "server_cpu_s": None if cpu is None else round(cpu, 1),
            "server_cpu_ms_per_answer": round(1000 * cpu / answered, 1) if cpu is not None and answered else None,
            "add": adds.report(add_wall), "search": searches.report(wall), "add_timeline": timeline,
            "server_ms": server_times(srv, log0), "acked": acked}


async def storm(url: str, n: int, pool: list[list[dict]]) -> dict[str, object]:
    """Each Add sent three times at once with the same request_id."""
    marks: list[tuple[str, str]] = []
    statuses: Counter[str] = Counter()
    async with httpx.AsyncClient(base_url=url, timeout=600) as client:
        async def one(i: int) -> None:
            mark = f"s{uuid.uuid4().hex[:16]}"
            body = {"user_id": "storm", "session_id": f"storm-{i}", "request_id": f"storm-{i}",
                    "messages": marked(pool[i % len(pool)], mark)}
            rs = await asyncio.gather(*(post(client, "/add", body) for _ in range(3)))
            for r in rs:
                statuses["error" if r is None else str(r.status_code)] += 1
            # 409 means "the first copy is still being stored": the platform retries it.
            while not any(r is not None and r.status_code == 200 for r in rs):
                rs = [await post(client, "/add", body)]
            marks.append((f"storm-{i}", mark))

        await asyncio.gather(*(one(i) for i in range(n)))
    counts = await found(url, "storm", marks)
    return {"adds": n, "copies_sent": 3 * n, "statuses": dict(statuses),
            "found_once": sum(c == 1 for c in counts.values()), "missing": sum(c == 0 for c in counts.values()),
            "duplicated": sum(c > 1 for c in counts.values())}


async def crash(srv: Server, clients: int, after_s: float) -> dict[str, object]:
    """Stream Adds, SIGKILL the server mid-stream, restart it, and check what survived."""
    sent: list[tuple[str, str]] = []
    acked: set[str] = set()
    stop = asyncio.Event()
    async with httpx.AsyncClient(base_url=srv.url, timeout=60) as client:
        async def streamer(i: int) -> None:
            n = 0
            while not stop.is_set():
                mark, session = f"k{uuid.uuid4().hex[:16]}", f"crash-{i}-{n // 4}"
                sent.append((session, mark))
                body = {"user_id": "crash", "session_id": session, "request_id": f"crash-{i}-{n}",
                        "messages": [{"role": "user", "content": f"[crash check {mark} part 1] see the log"},
                                     {"role": "assistant", "content": f"[crash check {mark} part 2] noted"}]}
                r = await post(client, "/add", body)
                if r is None:  # the server is gone: what was in flight is cut off, nothing more is sent
                    break
                if r.status_code == 200:
                    acked.add(mark)
                n += 1

        async def killer() -> None:
            await asyncio.sleep(after_s)
            await asyncio.to_thread(srv.kill)
            stop.set()

        await asyncio.gather(killer(), *(streamer(i) for i in range(clients)))
    t0 = time.perf_counter()
    if not srv.revive():
        raise ServerError("the server outlived its SIGKILL")
    restart_s = time.perf_counter() - t0
    texts = await answers(srv.url, "crash", sent)
    # Which of its two messages each Add has in store (the card's task may quote part 1 too).
    parts = {m: sum(f"[crash check {m} part {n}]" in t for n in (1, 2)) for m, t in texts.items()}
    return {"adds_sent": len(sent), "acknowledged": len(acked), "restart_s": round(restart_s, 1),
            "acknowledged_lost": sum(parts[m] < 2 for m in acked),
            "half_written": sum(c == 1 for c in parts.values()),
            "unacknowledged_stored_whole": sum(parts[m] == 2 for _, m in sent if m not in acked)}


async def preload(url: str, pool: list[list[dict]], messages: int, clients: int) -> int:
    """`messages` messages in the pool's chunks (cycled, each pass under new session ids),
    sent by `clients` clients at once; a 503 is retried after its Retry-After."""
    sent = 0
    async with httpx.AsyncClient(base_url=url, timeout=600) as client:
        sem = asyncio.Semaphore(clients)

        async def one(i: int, chunk: list[dict]) -> None:
            async with sem:
                body = {"user_id": "load", "session_id": f"pre-{i // 5}", "request_id": f"pre-{i}", "messages": chunk}
                while (r := await post(client, "/add", body)) is not None and r.status_code == SHED:
                    await back_off(r, time.monotonic() + 60)
                assert r is not None and r.status_code == 200, r

        todo = []
        for i in itertools.count():
            if sent >= messages or not pool:
                break
            chunk = pool[i % len(pool)]
            todo.append(one(i, chunk))
            sent += len(chunk)
        await asyncio.gather(*todo)
    return sent


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--adders", type=int, default=64)
    p.add_argument("--searchers", type=int, default=256)
    p.add_argument("--preload", type=int, default=2000, help="messages stored before the load starts")
    p.add_argument("--cold", action="store_true",
                   help="start the load before the model is loaded, with no preload (an empty store)")
    p.add_argument("--users", type=int, default=1, help="user ids the clients are spread over")
    p.add_argument("--adds-per-session", type=int, default=5, help="sustained-phase Adds to each session")
    p.add_argument("--preload-clients", type=int, default=8, help="Add clients sending the preload")
    p.add_argument("--single-message", action="store_true",
                   help="each sustained-phase Add carries one message (default: a 20-message chunk)")
    p.add_argument("--storm", type=int, default=100, help="Adds sent three times at once")
    p.add_argument("--crash-clients", type=int, default=16, help="Add clients streaming when the server is killed")
    p.add_argument("--crash-after", type=float, default=10, help="seconds of streaming before SIGKILL")
    p.add_argument("--timeout", type=float, default=600, help="client timeout per request, seconds")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                   help="server setting, e.g. CODEMEM_MAX_INFLIGHT_ADDS=8")
    p.add_argument("--data", type=Path, default=SWE_LITE, help="the swe-contextbench-lite folder")
    p.add_argument("--sessions", type=int, default=None, help="read only the first N transcripts (smoke runs)")
    p.add_argument("--source", default=None,
                   help="serve the project from this snapshot directory (e.g. an older commit's worktree) instead of the checkout")
    p.add_argument("--out", default=str(RESULTS / "load.json"))
    args = p.parse_args(argv)
    prov = provenance("eval.load", argv)
    env = dict(item.split("=", 1) for item in args.env)

    pool = chunks_of(load_sessions(args.data / "trajectories.tar.xz", args.sessions))
    queries = load_queries(args.data / "related_tasks.jsonl")
    started = time.time()
    if args.cold:
        args.preload = 0
    with running_server(env=env, need_model=not args.cold, source=args.source) as srv:
        print(f"server {srv.url}; preloading {args.preload:,} messages ...", flush=True)
        preloaded = asyncio.run(preload(srv.url, pool, args.preload, args.preload_clients)) if args.preload else 0
        print(f"sustained: {args.adders} Add + {args.searchers} Search clients for {args.seconds:.0f} s ...", flush=True)
        load = asyncio.run(sustained(srv, args, pool, queries))
        acked = load.pop("acked")
        print(f"  {load}", flush=True)
        print(f"checking {len(acked):,} acknowledged Adds ...", flush=True)
        counts = asyncio.run(found_per_user(srv.url, acked))
        missed = [(u, sid, mark) for u, sid, mark in acked if counts.get(mark) == 0]
        # Every Add a Search did not show is looked up in its session's page: a loss, or
        # a ranking miss of a stored Add.
        came_back = asyncio.run(what_came_back(srv.url, missed)) if missed else []
        lost = sum(not m["mark_in_session_page"] for m in came_back)
        print(f"retry storm: {args.storm} Adds x 3 ...", flush=True)
        storm_result = asyncio.run(storm(srv.url, args.storm, pool))
        print(f"crash: {args.crash_clients} Add clients, SIGKILL after {args.crash_after:.0f} s ...", flush=True)
        crash_result = asyncio.run(crash(srv, args.crash_clients, args.crash_after))
    result = {
        "date_utc": datetime.now(UTC).isoformat(timespec="seconds"), "cpu_count": os.cpu_count(),
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}, "preloaded_messages": preloaded, "sustained": load,
        "acknowledged_adds": len(acked), "lost": lost, "stored_not_shown": len(came_back) - lost,
        "missed_examples": came_back[:5],
        "storm": storm_result, "crash": crash_result,
        "total_s": round(time.time() - started, 1),
    }
    write_result(args.out, result, prov)
    print(json.dumps({k: v for k, v in result.items() if k not in ("args", "provenance")}, indent=2))
    ok = (lost == 0 and storm_result["duplicated"] == 0 and storm_result["missing"] == 0
          and crash_result["acknowledged_lost"] == 0 and crash_result["half_written"] == 0)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
