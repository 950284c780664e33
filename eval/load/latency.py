"""Add and Search latency of the real service at growing memory sizes.

    python -m eval.load.latency                          # 1,000 then 20,000 items (~10 min on 2 cores)
    python -m eval.load.latency --items 1000,5000,20000 --chunk 20 --searches 200 --concurrency 4 \
        --out eval/results/latency.json
    python -m eval.load.latency --items 1000,5000 --env CODEMEM_EMBED_MESSAGES=true   # messages embedded too: slow

With default settings raw messages are BM25-only (`embed_messages` off) and only each
session's card and steps are embedded, so ingest runs at ~50-100 messages/s on 2 cores and
20,000 items take a few minutes. With CODEMEM_EMBED_MESSAGES=true every message is embedded
(~2 s per 20-message chunk on one core): 20,000 items then take ~40-60 min; use fewer items.

One `codemem serve` (default settings unless `--env NAME=VALUE`) and one user_id. For each
target item count N (cumulative), 20-message chunks of real Claude Code transcripts
(SWE-ContextBench Lite) are Added by `--concurrency` concurrent clients (each takes a whole
session and sends its chunks in order) until N messages are stored (the table also holds
each session's derived card/step rows: "table rows"); the benchmark then waits until the
background compactor has folded everything in (nothing unindexed, <= 2 fragments, version
steady; read from the table's stats from outside the server), and runs `--searches`
sequential Searches (the related tasks' problem statements, top_k 100) end to end over
HTTP, with the server's CPU time per Search. Query embedding alone is timed in this process
with the same `ShippedEmbedder` and query token limit; the rest of a Search is reported as
store+HTTP.

`--env` also takes process variables (e.g. OMP_NUM_THREADS); `--also-default-env` then
restarts the server on the same data without the OMP_/MKL_ ones and repeats the Searches.
`--source DIR` runs a snapshot copy of the project (codemem/, api/, parsers/) instead of the
checkout, for a long run while others edit the tree.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from queue import Empty, Queue
from typing import Any

os.environ.setdefault("LANCE_LOG", "error")  # lance's per-query deprecation warnings, in this process

import httpx  # noqa: E402

from eval._compaction import table_stats, wait_compacted  # noqa: E402
from eval._data import RELATED, chunks, load_queries, load_sessions  # noqa: E402
from eval._paths import REPO_ROOT, RESULTS, SWE_LITE, SWE_LITE_TAR  # noqa: E402
from eval._provenance import header as provenance_header  # noqa: E402
from eval._provenance import provenance, write_result  # noqa: E402
from eval._server import (  # noqa: E402
    Server,
    post_retrying,
    proc_cpu_s,
    running_server,
    shield_from_stray_sigterm,
    use_source,
)
from eval._stats import percentile, summary_ms  # noqa: E402

DATA = SWE_LITE
TAR = SWE_LITE_TAR


# -- measuring --------------------------------------------------------------------------------

def add_all(srv: Server, user_id: str, work: list[tuple[str, str, list[dict]]], concurrency: int,
            timeout_s: float = 600.0) -> tuple[list[float], float, list[str]]:
    """Send the Adds with `concurrency` clients, as a platform would: each client takes a whole
    session and sends its chunks in order; sessions run in parallel. Returns (latencies, wall
    seconds, errors)."""
    by_session: dict[str, list[tuple[str, str, list[dict]]]] = {}
    for item in work:
        by_session.setdefault(item[1], []).append(item)
    q: Queue[list[tuple[str, str, list[dict]]]] = Queue()
    for session_chunks in by_session.values():
        q.put(session_chunks)
    lat: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()

    def worker() -> None:
        with httpx.Client(timeout=timeout_s, trust_env=False) as client:
            while not stop.is_set():
                try:
                    session_chunks = q.get_nowait()
                except Empty:
                    return
                for rid, sid, msgs in session_chunks:
                    if not stop.is_set():
                        send(client, rid, sid, msgs)

    def send(client: httpx.Client, rid: str, sid: str, msgs: list[dict]) -> None:
        body: dict[str, object] = {"request_id": rid, "user_id": user_id, "session_id": sid, "messages": msgs}
        dt = 0.0
        try:
            r, dt = post_retrying(client, srv, "/add", body)
            ok = r.status_code == 200 and r.json().get("success") is True
            err = None if ok else f"HTTP {r.status_code}: {r.text[:200]}"
        except Exception as exc:  # noqa: BLE001
            err = f"{type(exc).__name__}: {exc}"
        with lock:
            if err is None:
                lat.append(dt)
            else:
                errors.append(err)
                if len(errors) > 20:
                    stop.set()

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker, daemon=True) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return lat, time.perf_counter() - t0, errors


def run_searches(srv: Server, user_id: str, queries: list[str], n: int, top_k: int = 100, warmup: int = 3,
                 timeout_s: float = 120.0) -> dict[str, Any]:
    """`n` sequential Searches (cycling through `queries`), after `warmup` untimed ones."""
    lat: list[float] = []
    warm: list[float] = []
    sizes: list[int] = []
    hits: list[int] = []
    errors: list[str] = []
    with httpx.Client(timeout=timeout_s, trust_env=False) as client:
        for i in range(warmup + n):
            q = queries[i % len(queries)] if i >= warmup else queries[-1 - i % len(queries)]
            r, dt = post_retrying(client, srv, "/search", {"query": q, "user_id": user_id, "top_k": top_k})
            body = r.content
            if r.status_code != 200:
                errors.append(f"HTTP {r.status_code}: {body[:200]!r}")
                continue
            if i < warmup:
                warm.append(dt)
                continue
            lat.append(dt)
            sizes.append(len(body))
            hits.append(len(json.loads(body)["data"]))
    return {"latency_ms": summary_ms(lat), "warmup_ms": [w * 1000 for w in warm], "errors": errors,
            "response_bytes_p50": percentile(sizes, 50), "hits_p50": percentile(hits, 50), "raw_ms": [x * 1000 for x in lat]}


def searches_with_cpu(srv: Server, user_id: str, queries: list[str], n: int) -> dict[str, Any]:
    """`run_searches`, plus the server's CPU ms per Search (None if it was restarted meanwhile)."""
    pid, cpu0 = srv.pid, proc_cpu_s(srv.pid)
    res = run_searches(srv, user_id, queries, n)
    cpu1 = proc_cpu_s(srv.pid) if srv.pid == pid else None
    res["server_cpu_ms_per_search"] = None if cpu0 is None or cpu1 is None else (cpu1 - cpu0) * 1000 / (n + 3)
    res["server_restarts_so_far"] = srv.restarts
    return res


def health_rtt(srv: Server, n: int = 50) -> dict[str, Any]:
    lat = []
    with httpx.Client(timeout=10, trust_env=False) as client:
        for _ in range(n):
            t0 = time.perf_counter()
            client.get(srv.url + "/health")
            lat.append(time.perf_counter() - t0)
    return summary_ms(lat)


class QueryEmbedTimer:
    """Query embedding alone, in this process, with the service's own embedder."""

    def __init__(self, server_env: dict[str, str] | None = None) -> None:
        from codemem.config import Settings
        from codemem.encoders import ShippedEmbedder

        # The server's settings: its defaults plus the CODEMEM_* values it was given.
        self.settings = Settings.from_env({k: v for k, v in (server_env or {}).items() if k.startswith("CODEMEM_")})
        try:
            self.embedder = ShippedEmbedder(threads=self.settings.embedding.threads)
        except (TypeError, AttributeError):  # an older embedder, without this setting
            self.embedder = ShippedEmbedder()
        getattr(self.embedder, "warm", self.embedder.load)()  # as the server does
        self.embedder.embed(["warm up"], self.settings.embedding.query_max_tokens)

    def time(self, queries: list[str], n: int, max_tokens: int | None = None) -> dict[str, Any]:
        max_tokens = max_tokens or self.settings.embedding.query_max_tokens
        lat = []
        for i in range(n):
            t0 = time.perf_counter()
            self.embedder.embed([queries[i % len(queries)]], max_tokens)
            lat.append(time.perf_counter() - t0)
        return summary_ms(lat)


# -- reporting --------------------------------------------------------------------------------

def conditions(settings_env: dict[str, str], source: str | None = None) -> dict[str, Any]:
    def ver(mod: str) -> str | None:
        try:
            from importlib.metadata import version
            return version(mod)
        except Exception:  # noqa: BLE001
            return None

    root = Path(source).resolve() if source else REPO_ROOT
    digest = hashlib.sha256()
    for f in sorted(list(root.glob("codemem/**/*.py")) + list(root.glob("api/**/*.py")) + list(root.glob("parsers/**/*.py"))):
        digest.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes())
    return {
        "source": str(root), "source_sha256_16": digest.hexdigest()[:16],
        "source_commit": (root / "HEAD_COMMIT").read_text().strip() if (root / "HEAD_COMMIT").exists() else None,
        "date_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "cpu_count": os.cpu_count(), "loadavg_at_start": os.getloadavg(),
        "platform": platform.platform(), "python": platform.python_version(),
        "lancedb": ver("lancedb"), "pylance": ver("pylance"), "torch": ver("torch"),
        "sentence_transformers": ver("sentence-transformers"),
        "server_env": settings_env or "defaults (no CODEMEM_* set)",
        "note": "the working tree may hold uncommitted edits by others; other jobs share the 2 cores",
    }


def fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f}"


def table_lines(result: dict) -> list[str]:
    head = ["items", "rows", "Add p50", "Add p95", "Srch p50", "Srch p95", "Srch p99", "emb p50", "rest p50", "srv CPU", "Add msg/s"]
    rows = []
    for cp in result["checkpoints"]:
        a, s, e = cp["add"]["latency_ms"], cp["search"]["latency_ms"], cp["query_embed_ms"]
        rest = None if s["p50"] is None or e["p50"] is None else s["p50"] - e["p50"]
        rows.append([f"{cp['items']:,}", str(cp.get("table_rows") or "-"), fmt(a["p50"]), fmt(a["p95"]), fmt(s["p50"]),
                     fmt(s["p95"]), fmt(s["p99"]), fmt(e["p50"]), fmt(rest), fmt(cp["search"].get("server_cpu_ms_per_search")),
                     f"{cp['add']['messages_per_s']:.1f}"])
    return [" | ".join(f"{h:>9}" for h in head)] + ["-" * (12 * len(head))] + [" | ".join(f"{c:>9}" for c in r) for r in rows]


LEGEND = ("ms. items = messages Added; rows = table rows incl. derived card/step rows; Add = one chunk end to end "
          "(with the other clients' chunks queued); Srch = Search end to end over HTTP; emb = query embedding alone "
          "(bench process, same model and settings); rest = Srch p50 - emb p50 = store + HTTP + hit building; "
          "srv CPU = server CPU ms per Search; Add msg/s = messages Added per second of wall time")


def markdown(result: dict) -> str:
    c = result["conditions"]
    lines = [
        f"# codemem latency ({c['date_utc']}, {c['cpu_count']} cores, load {c['loadavg_at_start'][0]:.1f} -> "
        f"{c['loadavg_at_end'][0]:.1f})",
        "",
        f"{provenance_header(result['provenance'])}", "",
        f"`{result['provenance']['command']}`",
        "",
        f"Adds: {result['params']['chunk']}-message chunks, {result['params']['concurrency']} concurrent clients; "
        f"Searches: {result['params']['searches']} sequential, top_k 100, queries = related tasks' problem statements. "
        f"Server env: {c['server_env']}. Source: {c['source']} (sha256 {c['source_sha256_16']}).",
        "",
        "```", *table_lines(result), "```", "", LEGEND + ".",
    ]
    again = result.get("final_search_without_omp_env")
    if again:
        s = again["latency_ms"]
        lines += ["", f"Same data, server restarted without the OMP_/MKL_ variables: Search p50 {fmt(s['p50'])}, "
                  f"p95 {fmt(s['p95'])}, p99 {fmt(s['p99'])} ms; server CPU {fmt(again['server_cpu_ms_per_search'])} ms/search."]
    lines += ["", f"HTTP floor (GET /health RTT p50): {result['checkpoints'][-1]['health_rtt_ms']['p50']:.1f} ms", ""]
    return "\n".join(lines)


def print_table(result: dict) -> None:
    print()
    print("\n".join(table_lines(result)))
    print("(" + LEGEND + ")")
    again = result.get("final_search_without_omp_env")
    if again:
        s = again["latency_ms"]
        print(f"without the OMP_/MKL_ env (same data, restarted): Search p50 {fmt(s['p50'])} p95 {fmt(s['p95'])} "
              f"p99 {fmt(s['p99'])} ms; server CPU {fmt(again['server_cpu_ms_per_search'])} ms/search")


# -- main -------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m eval.load.latency", description=__doc__.split("\n\n")[0])
    p.add_argument("--items", default="1000,20000", help="cumulative item counts to measure at")
    p.add_argument("--chunk", type=int, default=20, help="messages per Add")
    p.add_argument("--searches", type=int, default=200)
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="server setting, e.g. CODEMEM_COMPACT_INTERVAL_S=5")
    p.add_argument("--compact-timeout", type=float, default=300.0, help="max seconds to wait for the compactor per checkpoint")
    p.add_argument("--also-default-env", action="store_true",
                   help="after the last checkpoint, restart the server without the OMP_/MKL_ --env variables and search again")
    p.add_argument("--source", default=None, help="run the project from this snapshot directory instead of the checkout")
    p.add_argument("--data", type=Path, default=DATA, help="the swe-contextbench-lite folder")
    p.add_argument("--sessions", type=int, default=None, help="read only the first N transcripts (smoke runs)")
    p.add_argument("--out", default=str(RESULTS / "latency.json"))
    args = p.parse_args(argv)
    prov = provenance("eval.load.latency", argv)
    use_source(args.source)
    sigterms = shield_from_stray_sigterm()
    targets = sorted({int(x) for x in args.items.split(",") if x.strip()})
    env = dict(kv.split("=", 1) for kv in args.env)
    # Threading settings for torch (OMP_*, MKL_*) apply to this process's query-embedding
    # timer too, so it runs the model the way the server does; set before torch loads.
    for k, v in env.items():
        if k.startswith(("OMP_", "MKL_")):
            os.environ[k] = v
    user_id = "bench-latency"

    t_load = time.perf_counter()
    sessions = load_sessions(args.data / TAR.name, args.sessions)
    queries = load_queries(args.data / RELATED.name)
    print(f"loaded {len(sessions)} sessions, {sum(len(m) for _, m in sessions):,} messages, {len(queries)} queries "
          f"in {time.perf_counter() - t_load:.1f} s", flush=True)
    embed_timer = QueryEmbedTimer(env)
    result: dict[str, Any] = {
        "conditions": conditions(env, args.source),
        "params": {"items": targets, "chunk": args.chunk, "searches": args.searches, "concurrency": args.concurrency,
                   "top_k": 100, "user_id": user_id},
        "checkpoints": [],
    }
    gen = chunks(sessions, args.chunk, tag=f"lat{int(time.time())}")
    data_dir = tempfile.mkdtemp(prefix="cmbench-latency-")
    t_all = time.perf_counter()
    try:
        with running_server(data_dir=data_dir, env=env, source=args.source) as srv:
            print(f"server {srv.url} (pid {srv.pid}, data {srv.data_dir}, log {srv.log_path})", flush=True)
            stored = 0
            for target in targets:
                work = []
                while stored < target:
                    rid, sid, msgs = next(gen)
                    msgs = msgs[: target - stored]
                    work.append((rid, sid, msgs))
                    stored += len(msgs)
                n_msgs = sum(len(m) for _, _, m in work)
                print(f"[{target:,}] adding {len(work)} chunks / {n_msgs:,} messages with {args.concurrency} clients ...", flush=True)
                lat, wall, errors = add_all(srv, user_id, work, args.concurrency)
                if errors:
                    print(f"  {len(errors)} Add errors, first: {errors[0]}", flush=True)
                print(f"  done in {wall:.0f} s ({n_msgs / wall:.1f} msg/s); waiting for the compactor ...", flush=True)
                cstate = wait_compacted(srv.data_dir, args.compact_timeout)
                print(f"  compaction: {cstate}", flush=True)
                search = searches_with_cpu(srv, user_id, queries, args.searches)
                stats_after = table_stats(srv.data_dir)
                emb = embed_timer.time(queries, args.searches)
                rtt = health_rtt(srv)
                cp = {
                    "items": stored, "table_rows": cstate["stats"].get("rows"),
                    "add": {"chunks": len(work), "messages": n_msgs, "wall_s": wall, "messages_per_s": n_msgs / wall,
                            "latency_ms": summary_ms(lat), "errors": errors[:5], "n_errors": len(errors)},
                    "compaction": cstate, "stats_after_search": stats_after,
                    "search": search, "query_embed_ms": emb, "health_rtt_ms": rtt,
                    "loadavg": os.getloadavg(),
                }
                result["checkpoints"].append(cp)
                cp["server_restarts_so_far"] = srv.restarts
                Path(args.out).parent.mkdir(parents=True, exist_ok=True)
                write_result(args.out, result | {"partial": True, "ignored_sigterms": len(sigterms)}, prov)
                s = search["latency_ms"]
                print(f"  Search p50 {fmt(s['p50'])} p95 {fmt(s['p95'])} p99 {fmt(s['p99'])} ms; "
                      f"query embed p50 {fmt(emb['p50'])} ms; health RTT p50 {rtt['p50']:.1f} ms", flush=True)
        plain = {k: v for k, v in env.items() if not k.startswith(("OMP_", "MKL_"))}
        if args.also_default_env and plain != env:
            print(f"restarting the server without {sorted(set(env) - set(plain))} and searching again ...", flush=True)
            with running_server(data_dir=data_dir, env=plain, source=args.source) as srv:
                cpu0 = proc_cpu_s(srv.pid)
                again = run_searches(srv, user_id, queries, args.searches)
                cpu1 = proc_cpu_s(srv.pid)
                again["server_cpu_ms_per_search"] = (
                    None if cpu0 is None or cpu1 is None else (cpu1 - cpu0) * 1000 / (args.searches + 3))
                again["server_env"] = plain
                again["loadavg"] = os.getloadavg()
                result["final_search_without_omp_env"] = again
                s = again["latency_ms"]
                print(f"  Search p50 {fmt(s['p50'])} p95 {fmt(s['p95'])} p99 {fmt(s['p99'])} ms, "
                      f"server CPU {fmt(again['server_cpu_ms_per_search'])} ms/search", flush=True)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    result["total_wall_s"] = time.perf_counter() - t_all
    result["ignored_sigterms"] = len(sigterms)
    result["command"] = prov["command"]
    result["conditions"]["loadavg_at_end"] = os.getloadavg()
    out = write_result(args.out, result, prov, markdown=markdown)
    print_table(result)
    print(f"\nwrote {out} and {out.with_suffix('.md')} (total {result['total_wall_s'] / 60:.1f} min)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
