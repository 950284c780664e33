"""Memory, disk and speed as users pile up in one long-running server: N users, each one
instance of the Coding track (all 300 SWE-ContextBench Lite trajectories, ~7.6M tokens),
through HTTP Add into one `codemem serve`.

    python -m eval.load.scale [--users 10] [--concurrency 8] [--chunk 34] [--idle-s 30]
                              [--trajectories N] [--tasks N] [--env NAME=VALUE ...]
                              [--out eval/results/scale.json]

Users are Added one after another (user_id `scale-000`, `scale-001`, ...), each trajectory one
session (its instance_id; the other users' session_ids add `@user`, so that an item of theirs
in user 0's answers shows), `--chunk` messages an Add, `--concurrency` sessions at a time.
After each user: the server's memory (RssAnon and RssFile from /proc, its peak during the
ingest), the data directory's size on disk, Add tokens/s (tokens = characters / 4 of the
messages' text) by the wall clock and per CPU-second of the server, then user 0's labelled
tasks (`links_dev.json`, 62) Searched (top_k 100) right away, while the compactor still folds
the ingest's last rows into the indexes, and again after `--idle-s` seconds with no request
(when the memory is read again): Search p50/p95 and hit@1 at trajectory level
(`eval.replay.metrics`), items of other users in the answers (isolation: none), and how many
answers' first session, and whole session order, are the ones user 0 got when it was alone
(BM25's statistics are the table's, so other users' rows may reorder the tail of an answer).
Writes `eval/results/scale.{json,png}`; 10 users take ~35 min on the shared 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from eval._paths import RESULTS, SWE_LITE
from eval._provenance import header, provenance, write_result
from eval._server import (
    Server,
    post_retrying,
    proc_cpu_s,
    running_server,
    shield_from_stray_sigterm,
)
from eval._stats import percentile
from eval.replay.data import Task, Trajectory, iter_trajectories, load_tasks
from eval.replay.ingest import post_add, trajectory_adds
from eval.replay.metrics import CHARS_PER_TOKEN, Item, count_tokens, first_gold_session_rank, hit_at

TOP_K = 100
GB = 1024**3
FIRST_USER = "scale-000"


def log(msg: str) -> None:
    print(f"[scale {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def proc_memory(pid: int) -> dict[str, int]:
    """The process's RssAnon, RssFile and VmHWM in bytes (from /proc/PID/status)."""
    out: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("RssAnon", "RssFile", "VmHWM"):
                    out[key] = int(rest.split()[0]) * 1024
    except OSError:
        pass
    return out


def disk_bytes(path: str) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


class PeakSampler:
    """The server's largest RssAnon since the last `take`, sampled every `every_s`."""

    def __init__(self, pid: int, every_s: float = 0.5) -> None:
        self.pid, self.every_s = pid, every_s
        self._peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self._peak = max(self._peak, proc_memory(self.pid).get("RssAnon", 0))

    def take(self) -> int:
        peak, self._peak = max(self._peak, proc_memory(self.pid).get("RssAnon", 0)), 0
        return peak

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


def ingest_user(srv: Server, user: str, trajectories: list[Trajectory], chunk: int, concurrency: int) -> dict[str, Any]:
    """Every trajectory as one session of `user`, `concurrency` sessions at a time."""
    lat: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()

    def send(traj: Trajectory) -> None:
        with httpx.Client(timeout=1800.0, trust_env=False) as client:
            for body in trajectory_adds(user, session_id(user, traj.instance_id), traj, chunk,
                                        f"{user}:{traj.instance_id}"):
                try:
                    err, dt = post_add(client, srv, body)
                except Exception as exc:  # noqa: BLE001 - recorded, the run goes on
                    err, dt = f"{user} {traj.instance_id}: {type(exc).__name__}: {exc}", 0.0
                with lock:
                    (errors.append(err) if err else lat.append(dt * 1000))

    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(send, trajectories))
    wall = time.perf_counter() - t0
    return {"wall_s": round(wall, 1), "adds": len(lat), "errors": errors[:20], "error_count": len(errors),
            "add_p50_ms": round(percentile(lat, 50) or 0), "add_p95_ms": round(percentile(lat, 95) or 0)}


def session_id(user: str, instance_id: str) -> str:
    """User 0's sessions are the trajectories' instance_ids (the labels name them); the other
    users' carry their user_id too."""
    return instance_id if user == FIRST_USER else f"{instance_id}@{user}"


def search_user(srv: Server, user: str, tasks: list[Task]) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """Each task's query Searched in `user`'s memory: latency, hit@1, items of other users,
    and each answer's distinct sessions in order (to compare across checkpoints)."""
    ms: list[float] = []
    hits: list[float] = []
    answers: dict[str, list[str]] = {}
    errors = foreign = 0
    with httpx.Client(timeout=600.0, trust_env=False) as client:
        for task in tasks:
            r, dt = post_retrying(client, srv, "/search", {"user_id": user, "query": task.query, "top_k": TOP_K})
            data = r.json().get("data", []) if r.status_code == 200 else []
            errors += r.status_code != 200
            items = [Item(str(h.get("session_id", "")), count_tokens(h.get("content"))) for h in data]
            foreign += sum(it.session_id != session_id(user, it.session_id.split("@")[0]) for it in items)
            ms.append(dt * 1000)
            hits.append(hit_at(first_gold_session_rank(items, task.gold), 1))
            answers[task.instance_id] = list(dict.fromkeys(it.session_id for it in items))
    return ({"queries": len(tasks), "errors": errors, "foreign_items": foreign,
             "hit1": round(sum(hits) / len(hits), 4) if hits else None,
             "p50_ms": round(percentile(ms, 50) or 0, 1), "p95_ms": round(percentile(ms, 95) or 0, 1)}, answers)


def gb(n: int | None) -> float | None:
    return None if n is None else round(n / GB, 3)


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["checkpoints"]
    tokens = [r["tokens_total"] / 1e6 for r in rows]
    fig, (mem, lat) = plt.subplots(1, 2, figsize=(11, 4))
    mem.plot(tokens, [r["memory"]["rss_anon_gb"] for r in rows], "o-", label="after ingest")
    mem.plot(tokens, [r["memory"]["idle_rss_anon_gb"] for r in rows], "s-", label=f"after {result['idle_s']} s idle")
    mem.plot(tokens, [r["memory"]["peak_rss_anon_gb"] for r in rows], "^:", label="peak during ingest")
    mem.plot(tokens, [r["disk_gb"] for r in rows], "x--", label="disk (data dir)")
    mem.set_xlabel("tokens ingested (M)")
    mem.set_ylabel("GB")
    mem.set_title("server memory (RssAnon) and disk")
    mem.set_ylim(bottom=0)
    mem.legend()
    lat.plot(tokens, [r["search"]["p50_ms"] for r in rows], "o-", label="Search p50, user 0")
    lat.plot(tokens, [r["search"]["p95_ms"] for r in rows], "s-", label="Search p95, user 0")
    lat.plot(tokens, [r["search_right_after_ingest"]["p95_ms"] for r in rows], "s:",
             label="Search p95 right after the ingest")
    lat.set_xlabel("tokens ingested (M)")
    lat.set_ylabel("ms")
    lat.set_ylim(bottom=0)
    ax2 = lat.twinx()
    ax2.plot(tokens, [r["add_tokens_per_s"] / 1000 for r in rows], "d--", color="grey", label="Add k tokens/s")
    ax2.set_ylabel("Add k tokens/s")
    ax2.set_ylim(bottom=0)
    lat.set_title("Search latency and Add throughput")
    lines = lat.get_legend_handles_labels()[0] + ax2.get_legend_handles_labels()[0]
    lat.legend(lines, [str(line.get_label()) for line in lines], loc="lower left")
    fig.suptitle(f"{result['users']} users x {result['trajectories']} trajectories ({header(result['provenance'])})",
                 fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=SWE_LITE)
    ap.add_argument("--users", type=int, default=10)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--chunk", type=int, default=34)
    ap.add_argument("--idle-s", type=float, default=30.0)
    ap.add_argument("--trajectories", type=int, default=None, help="only the first N trajectories (a smoke run)")
    ap.add_argument("--tasks", type=int, default=None, help="only the first N labelled tasks")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="a server setting")
    ap.add_argument("--out", type=Path, default=RESULTS / "scale.json")
    args = ap.parse_args(argv)
    prov = provenance("eval.load.scale", argv)
    shield_from_stray_sigterm()

    tasks = load_tasks(args.data)[: args.tasks]
    trajectories = list(iter_trajectories(args.data, "default"))[: args.trajectories]
    if args.trajectories:  # a smoke run: keep the sampled tasks' gold in memory
        kept = {t.instance_id for t in trajectories}
        wanted = {g for t in tasks for g in t.gold} - kept
        trajectories += list(iter_trajectories(args.data, "default", wanted))
    tokens = sum(len(m.content) for t in trajectories for m in t.messages) / CHARS_PER_TOKEN
    log(f"{len(trajectories)} trajectories, {tokens / 1e6:.2f}M tokens per user, {len(tasks)} tasks, {args.users} users")
    env = dict(e.split("=", 1) for e in args.env)

    checkpoints: list[dict[str, Any]] = []
    alone: dict[str, list[str]] = {}
    with running_server(env=env) as srv:
        sampler = PeakSampler(srv.pid)
        log(f"server up, RssAnon {gb(proc_memory(srv.pid).get('RssAnon'))} GB")
        start_memory = proc_memory(srv.pid)
        try:
            for u in range(args.users):
                user = f"scale-{u:03d}"  # FIRST_USER for u = 0
                sampler.take()
                cpu0 = proc_cpu_s(srv.pid)
                ing = ingest_user(srv, user, trajectories, args.chunk, args.concurrency)
                cpu1 = proc_cpu_s(srv.pid)
                cpu = None if cpu0 is None or cpu1 is None else cpu1 - cpu0
                after = proc_memory(srv.pid)
                peak = sampler.take()
                busy, _ = search_user(srv, FIRST_USER, tasks)  # while the compactor folds the ingest's tail
                time.sleep(args.idle_s)
                idle = proc_memory(srv.pid)
                search, answers = search_user(srv, FIRST_USER, tasks)
                if u == 0:
                    alone = answers
                same = sum(answers[t] == alone[t] for t in alone)
                same_first = sum(answers[t][:1] == alone[t][:1] for t in alone)
                row = {
                    "users": u + 1, "tokens_total": round(tokens * (u + 1)),
                    "ingest": ing, "add_tokens_per_s": round(tokens / ing["wall_s"]),
                    # The server's CPU seconds for the ingest (all its threads): what a busy
                    # shared machine changes least; tokens per CPU-second times the cores it
                    # could use is what it would take in on a machine of its own.
                    "server_cpu_s": None if cpu is None else round(cpu, 1),
                    "add_tokens_per_cpu_s": None if not cpu else round(tokens / cpu),
                    "memory": {"rss_anon_gb": gb(after.get("RssAnon")), "rss_file_gb": gb(after.get("RssFile")),
                               "peak_rss_anon_gb": gb(peak), "idle_rss_anon_gb": gb(idle.get("RssAnon"))},
                    "disk_gb": gb(disk_bytes(srv.data_dir)),
                    "search": {**search, "answers_as_when_alone": same, "first_as_when_alone": same_first},
                    "search_right_after_ingest": busy,
                    "loadavg": [round(x, 2) for x in os.getloadavg()],
                    "server_restarts": srv.restarts,
                }
                checkpoints.append(row)
                log(json.dumps(row))
        finally:
            sampler.close()

    first, last = checkpoints[0], checkpoints[-1]
    at4 = next((c for c in checkpoints if c["users"] == 4), None)
    result: dict[str, Any] = {
        "users": args.users, "trajectories": len(trajectories), "tokens_per_user": round(tokens),
        "tasks": len(tasks), "chunk": args.chunk, "concurrency": args.concurrency, "idle_s": args.idle_s,
        "env": env, "tokens": "characters / 4 of the messages' text",
        "server_start_rss_anon_gb": gb(start_memory.get("RssAnon")),
        "checkpoints": checkpoints,
        "summary": {
            "add_tokens_per_s_mean": round(sum(c["add_tokens_per_s"] for c in checkpoints) / len(checkpoints)),
            "add_tokens_per_cpu_s_mean": round(sum(c["add_tokens_per_cpu_s"] or 0 for c in checkpoints) / len(checkpoints)),
            "idle_rss_anon_gb": {str(c["users"]): c["memory"]["idle_rss_anon_gb"] for c in checkpoints},
            "search_p95_ms_1_user": first["search"]["p95_ms"],
            "search_p95_ms_4_users": at4["search"]["p95_ms"] if at4 else None,
            "search_right_after_ingest_p95_ms": {str(c["users"]): c["search_right_after_ingest"]["p95_ms"]
                                                 for c in checkpoints},
            "search_p95_ms_last": last["search"]["p95_ms"],
            "hit1": sorted({c["search"]["hit1"] for c in checkpoints}),
            "foreign_items": sum(c["search"]["foreign_items"] for c in checkpoints),
            "first_unchanged": all(c["search"]["first_as_when_alone"] == len(tasks) for c in checkpoints),
            "answers_unchanged": sum(c["search"]["answers_as_when_alone"] == len(tasks) for c in checkpoints),
            "add_errors": sum(c["ingest"]["error_count"] for c in checkpoints),
        },
    }
    out = write_result(args.out, result, prov)
    plot(result, out.with_suffix(".png"))
    log(f"wrote {out} and {out.with_suffix('.png')}")
    print(json.dumps(result["summary"], indent=2))


if __name__ == "__main__":
    main()
