"""The Coding track's heaviest load through the shipped proxy: many large Adds at once, each
a new session, through deploy/Caddyfile in front of a real `codemem serve` with a key, while
a monitor polls /health through the same proxy every second.

    python -m eval.load.proxy [--adds 32] [--mib 28] [--out eval/results/proxy_load.json]

Each Add is one agent session of about `--mib` MiB: the agent's reasoning (12 kB) between tool
outputs of `--tool-kb` kB each (build logs, diffs, JSON), every message different from every other
Add's, the last one holding a mark of its own. All are sent at once (one connection each).
It reports every Add's status and time, every health poll's status and time, codemem's peak
resident memory (sampled every 0.2 s from /proc) and after 30 s idle, the same health polls
sent straight to codemem (what the proxy and the machine's load add to them), the Add bytes in flight
and the Adds queued (`/metrics`, sampled every second), whether a Search finds each Add's mark
afterwards, and whether the key reached any of Caddy's logs. Targets (issue 54): every Add
200 and found, every poll 200 with p95 <= 1 s (no 503), peak resident memory <= 2.5 GB.
`--env NAME=VALUE` sets a server setting (CODEMEM_MAX_ADD_BYTES_INFLIGHT, to measure what a
setting needs); `--source DIR` runs another checkout's codemem and Caddyfile (the baseline).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import shutil
import ssl
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

import httpx

from codemem.config import Limits
from eval._caddy import CADDYFILE, running_caddy
from eval._paths import RESULTS
from eval._provenance import provenance, write_result
from eval._server import running_server
from eval._stats import summary_ms
from eval.load.large_messages import build_log, diff, minified_json, prose

KEY = "proxy-load-" + "5c1e" * 12
TARGETS = {"health_p95_s": 1.0, "peak_rss_gb": 2.5}
# What an agent's session holds, by share of its bytes: tool outputs dominate.
TOOL_OUTPUTS = (build_log, diff, minified_json)
TOOL_KB = 300
BODY_LIMIT = 30 * 1024 * 1024 - 64 * 1024  # the contract's limit, less room for the JSON around the texts
REASONING_CHARS = 12_000


def _pool(tool_chars: int) -> dict[str, list[str]]:
    """A text of each kind, generated once; each Add varies them (`_session`)."""
    return {"tool": [make(tool_chars) for make in TOOL_OUTPUTS], "reasoning": [prose(REASONING_CHARS)]}


def _vary(text: str, tag: str) -> str:
    """`text` with names of its own: every line that names a module, handler or item, or
    the scheduler, differs from every other message's."""
    for word in ("src/mod_", "handler_", "item_", "scheduler", "Worker", "unit_"):
        text = text.replace(word, f"{word}{tag}_")
    return text


@dataclass(frozen=True)
class AddOutcome:
    add: int
    status: int  # 0: no answer
    seconds: float
    detail: str  # the answer's start, or the error, when it was not 200


def _session(i: int, mib: float, pool: dict[str, list[str]]) -> tuple[dict[str, Any], str]:
    """The Add body of session `i`, about `mib` MiB as JSON, and its mark."""
    mark = f"loadmark{i:03d}zq"
    messages: list[dict[str, str]] = [{"role": "user", "content": f"Fix the flaky build of service {i}: "
                                       "the linker step fails on the release branch."}]
    size, j = 0, 0
    while size < mib * 1024 * 1024:
        tool = _vary(pool["tool"][j % len(pool["tool"])], f"a{i}m{j}")
        note = _vary(pool["reasoning"][0], f"a{i}m{j}")
        pair = len(json.dumps(tool)) + len(json.dumps(note))
        if j and size + pair > BODY_LIMIT:  # large messages: fewer, within the contract's 30 MiB
            break
        messages += [{"role": "assistant", "content": note}, {"role": "user", "content": tool}]
        size += pair
        j += 1
    messages.append({"role": "assistant", "content": f"The linker failure came from {mark}: the release "
                                                     "profile dropped the static runtime."})
    body = {"request_id": f"load-{i}", "user_id": f"load-u{i}", "session_id": f"s{i}", "messages": messages}
    return body, mark


def poll_health(url: str, cafile: str, started: float, out: str, stop: Event) -> None:
    """GET /health every second until `stop`, one JSON line a poll: (seconds since `started`,
    status, seconds taken); status 0 when no answer came."""
    tls = ssl.create_default_context(cafile=cafile)
    with httpx.Client(base_url=url, verify=tls, timeout=30, trust_env=False) as client, open(out, "w") as f:
        while not stop.is_set():
            t0 = time.monotonic()
            try:
                status = client.get("/health").status_code
            except httpx.HTTPError:
                status = 0
            f.write(json.dumps([round(t0 - started, 2), status, time.monotonic() - t0]) + "\n")
            f.flush()
            stop.wait(max(0.0, 1.0 - (time.monotonic() - t0)))


def _polls(path: Path) -> list[tuple[float, int, float]]:
    """(seconds since the start, status, latency) of each health poll (the polls straight to
    codemem are what Caddy adds to)."""
    return [(float(at), int(status), float(took)) for at, status, took in map(json.loads, path.read_text().splitlines())]


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _metric(text: str, name: str) -> float | None:
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--adds", type=int, default=32)
    ap.add_argument("--mib", type=float, default=28.0)
    ap.add_argument("--tool-kb", type=int, default=TOOL_KB, help="the size of each tool output (a message)")
    ap.add_argument("--env", action="append", default=[], help="NAME=VALUE for the server")
    ap.add_argument("--source", type=Path, default=None,
                    help="run another commit's codemem and deploy/Caddyfile (a checkout): the baseline")
    ap.add_argument("--out", type=Path, default=RESULTS / "proxy_load.json")
    args = ap.parse_args(argv)
    prov = provenance("eval.load.proxy", argv)
    pool = _pool(args.tool_kb * 1000)
    bodies = [_session(i, args.mib, pool) for i in range(args.adds)]
    payloads = [json.dumps(body).encode() for body, _ in bodies]
    print(f"{args.adds} Adds of {sum(map(len, payloads)) / args.adds / 2**20:.1f} MiB each", flush=True)
    server_env = {"CODEMEM_API_KEY": KEY, "CODEMEM_LOG_FORMAT": "json",
                  **dict(item.split("=", 1) for item in args.env)}
    folder = Path(tempfile.mkdtemp(prefix="cmbench-proxy-"))
    headers = {"X-Api-Key": KEY, "Content-Type": "application/json"}
    rss: list[int] = []
    queue: list[tuple[float, float | None, float | None]] = []  # (t, bytes in flight, Adds queued)
    # One event ends every monitor: the memory thread here, the health pollers' processes.
    spawn = multiprocessing.get_context("spawn")
    stop = spawn.Event()

    shipped = (args.source / "deploy" / "Caddyfile") if args.source else CADDYFILE
    with running_server(env=server_env, source=args.source) as srv, \
            running_caddy(folder, srv.url.removeprefix("http://"), shipped=shipped) as proxy:
        idle_rss_kb = _rss_kb(srv.pid)
        started = time.monotonic()

        def monitor_memory() -> None:
            with httpx.Client(base_url=srv.url, headers={"X-Api-Key": KEY}, timeout=30, trust_env=False) as client:
                tick = 0
                while not stop.is_set():
                    rss.append(_rss_kb(srv.pid))
                    if tick % 5 == 0:
                        try:
                            text = client.get("/metrics").text
                            queue.append((round(time.monotonic() - started, 1),
                                          _metric(text, "codemem_add_bytes_inflight"), _metric(text, "codemem_adds_queued")))
                        except httpx.HTTPError:
                            pass
                    tick += 1
                    stop.wait(0.2)

        def send(i: int) -> AddOutcome:
            t0 = time.monotonic()
            with httpx.Client(base_url=proxy.url, verify=proxy.tls, timeout=httpx.Timeout(2100, connect=30)) as client:
                try:
                    r = client.post("/add", content=payloads[i], headers=headers)
                    status, detail = r.status_code, (r.text[:200] if r.status_code != 200 else "")
                except httpx.HTTPError as exc:
                    status, detail = 0, f"{type(exc).__name__}: {exc}"[:200]
            return AddOutcome(i, status, round(time.monotonic() - t0, 1), detail)

        # The health polls run in processes of their own, as the platform's would: in this one
        # they would wait for the GIL behind 32 uploads, which is not the server's time.
        pollers = [spawn.Process(target=poll_health, args=(url, str(proxy.ca_path), started, str(folder / name), stop))
                   for url, name in ((proxy.url, "polls-proxy.jsonl"), (srv.url, "polls-direct.jsonl"))]
        memory_monitor = threading.Thread(target=monitor_memory, daemon=True)
        for poller in pollers:
            poller.start()
        memory_monitor.start()
        with ThreadPoolExecutor(args.adds) as senders:
            adds = list(senders.map(send, range(args.adds)))
        load_s = time.monotonic() - started
        with httpx.Client(base_url=proxy.url, verify=proxy.tls, headers={"X-Api-Key": KEY}, timeout=120) as client:
            found = []
            for (body, mark) in bodies:
                hits = client.post("/search", json={"user_id": body["user_id"], "query": mark, "top_k": 5}).json()["data"]
                found.append(any(mark in h["content"] for h in hits))
        time.sleep(30)
        stop.set()
        memory_monitor.join(timeout=40)
        for poller in pollers:
            poller.join(timeout=40)
        polls, direct = (_polls(folder / name) for name in ("polls-proxy.jsonl", "polls-direct.jsonl"))
        after_idle_rss_kb = _rss_kb(srv.pid)
        caddy_logs = b"".join(f.read_bytes() for f in folder.rglob("*") if f.is_file() and f.name != "Caddyfile")
        server_log = Path(srv.log_path).read_bytes()
    shutil.rmtree(folder, ignore_errors=True)  # Caddy's state and logs, read above

    during = [p for p in polls if p[0] <= load_s]
    statuses: dict[str, int] = {}
    for _, status, _ in during:
        statuses[str(status)] = statuses.get(str(status), 0) + 1
    health = summary_ms([latency for _, _, latency in during], 1)
    peak_gb = round(max(rss, default=0) / 1024**2, 2)
    result = {
        "adds": args.adds, "tool_kb": args.tool_kb, "messages_each": len(bodies[0][0]["messages"]), "mib_each": round(sum(map(len, payloads)) / args.adds / 2**20, 1),
        "server_env": {k: v for k, v in server_env.items() if k != "CODEMEM_API_KEY"},
        "source": str(args.source) if args.source else "this checkout",
        "add_bytes_bound_mib": None if args.source else
        int(server_env.get("CODEMEM_MAX_ADD_BYTES_INFLIGHT", Limits().max_add_bytes_inflight)) / 2**20,
        "load_s": round(load_s, 1),
        "add_status": {str(s): sum(a.status == s for a in adds) for s in sorted({a.status for a in adds})},
        "add_ms": summary_ms([a.seconds for a in adds], 1),
        "found_after": sum(found),
        "health_polls": len(during), "health_status": statuses, "health_ms": health,
        "health_slowest": sorted(during, key=lambda p: -p[2])[:5],
        "health_direct_ms": summary_ms([latency for at, _, latency in direct if at <= load_s], 1),
        "rss_gb": {"idle_before": round(idle_rss_kb / 1024**2, 2), "peak": peak_gb,
                   "after_30s_idle": round(after_idle_rss_kb / 1024**2, 2)},
        "add_bytes_inflight_max": max((q[1] or 0 for q in queue), default=None),
        "adds_queued_max": max((q[2] or 0 for q in queue), default=None),
        "queue_samples": queue,
        "key_in_caddy_logs": KEY.encode() in caddy_logs, "key_in_server_log": KEY.encode() in server_log,
        "targets": TARGETS,
        "adds_detail": [asdict(a) for a in adds],
    }
    p95 = health["p95"]
    result["meets_targets"] = bool(
        result["add_status"] == {"200": args.adds} and sum(found) == args.adds and statuses == {"200": len(during)}
        and p95 is not None and p95 <= TARGETS["health_p95_s"] * 1000 and peak_gb <= TARGETS["peak_rss_gb"]
        and not result["key_in_caddy_logs"])
    write_result(args.out, result, prov)
    print(json.dumps({k: v for k, v in result.items() if k not in ("adds_detail", "queue_samples")}, indent=1))


if __name__ == "__main__":
    main()
