"""The replay's memories: which tasks and trajectories one run covers (`Plan`), the manifest
that lets `--reuse` trust an ingested data directory, the ingest of every (user_id,
trajectory) through the real HTTP service, and the wait for the server's compactor to settle
before Searches are timed.
"""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import msgspec

from eval._compaction import wait_compacted
from eval._server import Server, post_retrying
from eval._stats import percentile
from eval.replay.data import (
    Condition,
    Task,
    Trajectory,
    build_conditions,
    iter_trajectories,
    load_tasks,
    same_file,
    smoke_selection,
    trajectory_edits,
    trajectory_lines,
    trajectory_repos,
)

MANIFEST = "replay-manifest.json"
RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}



def log(msg: str) -> None:
    print(msg, flush=True)


# -- plan -------------------------------------------------------------------------------------

@dataclass
class Plan:
    """What one run covers: the tasks searched, the memories (user_ids) and their trajectories."""

    tasks: list[Task]
    conditions: list[Condition]
    trajectories: dict[str, Trajectory]
    # Per task: the trajectories that edited a file its own fix touches (for useful@1).
    same_file: dict[str, frozenset[str]] = field(default_factory=dict)

    @property
    def task_by_id(self) -> dict[str, Task]:
        return {t.instance_id: t for t in self.tasks}


def make_plan(data: Path, rendering: str, kinds: Sequence[str], n_tasks: int | None, smoke: bool,
              n_others: int = 4) -> Plan:
    all_tasks = load_tasks(data)
    repos = trajectory_repos(data)
    all_gold = {g for t in all_tasks for g in t.gold}
    if smoke:
        tasks, universe = smoke_selection(all_tasks, repos, trajectory_lines(data), all_gold,
                                          n_tasks=n_tasks or 3, n_others=n_others)
    else:
        tasks, universe = all_tasks[:n_tasks] if n_tasks else all_tasks, set(repos)
    conditions = build_conditions(tasks, repos, universe, all_gold, kinds)
    wanted = {i for c in conditions for i in c.trajectories}
    trajs = {t.instance_id: t for t in iter_trajectories(data, rendering, wanted)}
    edits = trajectory_edits(data)
    touching = {t.instance_id: frozenset(i for i, e in edits.items() if same_file(e, t.files)) for t in tasks}
    return Plan(tasks, conditions, trajs, touching)


# -- data dir and manifest --------------------------------------------------------------------

class Manifest(msgspec.Struct):
    """What an ingested data dir holds, so `--reuse` never scores a mismatching memory."""

    rendering: str
    chunk: int
    users: dict[str, list[str]]  # user_id -> trajectory instance_ids
    data: str
    created_utc: str
    add_errors: int = 0


def manifest_for(plan: Plan, args: argparse.Namespace, add_errors: int) -> Manifest:
    return Manifest(rendering=args.rendering, chunk=args.chunk,
                    users={c.user_id: list(c.trajectories) for c in plan.conditions}, data=str(args.data),
                    created_utc=datetime.now(UTC).isoformat(timespec="seconds"), add_errors=add_errors)


def check_reusable(path: Path, plan: Plan, args: argparse.Namespace) -> Manifest:
    """The manifest of `path`; raises SystemExit when it does not hold what this run needs."""
    f = path / MANIFEST
    if not f.exists():
        raise SystemExit(f"--reuse {path}: no {MANIFEST} (not a finished replay ingest)")
    m = msgspec.json.decode(f.read_bytes(), type=Manifest)
    problems = []
    if (m.rendering, m.chunk) != (args.rendering, args.chunk):
        problems.append(f"ingested with rendering={m.rendering} chunk={m.chunk}, asked {args.rendering}/{args.chunk}")
    for c in plan.conditions:
        if m.users.get(c.user_id) != list(c.trajectories):
            problems.append(f"user_id {c.user_id!r} holds other trajectories (or none)")
    if problems:
        raise SystemExit(f"--reuse {path} does not match this run:\n  " + "\n  ".join(problems[:10]))
    if m.add_errors:
        log(f"warning: {path} was ingested with {m.add_errors} failed Adds")
    return m


# -- ingest -----------------------------------------------------------------------------------

@dataclass
class IngestReport:
    sessions: int = 0
    chunks: int = 0
    messages: int = 0
    wall_s: float = 0.0
    add_p50_ms: float | None = None
    add_p95_ms: float | None = None
    errors: list[str] = field(default_factory=list)
    reused: bool = False
    server_restarts: int = 0


def post_add(client: httpx.Client, srv: Server, body: dict[str, Any], attempts: int = 6) -> tuple[str | None, float]:
    """One Add, retried like the platform does (same request_id and body) on 408/409/425/429/5xx."""
    r, dt = post_retrying(client, srv, "/add", body)
    for attempt in range(attempts):
        if r.status_code not in RETRY_STATUS:
            break
        time.sleep(min(8.0, 0.5 * 2 ** attempt))
        r, dt = post_retrying(client, srv, "/add", body)
    if r.status_code == 200 and r.json().get("success") is True:
        return None, dt
    return f"{body['user_id']} {body['request_id']}: HTTP {r.status_code} {r.text[:200]}", dt


def trajectory_adds(user: str, session_id: str, traj: Trajectory, chunk: int, request_prefix: str) -> Iterator[dict[str, Any]]:
    """One trajectory's Add bodies in order, `chunk` messages each (request_id: the prefix and
    the chunk's first message)."""
    msgs = [msgspec.to_builtins(m) for m in traj.messages]
    for start in range(0, len(msgs), chunk):
        yield {"user_id": user, "session_id": session_id, "request_id": f"{request_prefix}:{start}",
               "messages": msgs[start:start + chunk]}


def ingest(srv: Server, plan: Plan, chunk: int, concurrency: int) -> IngestReport:
    """Every (user_id, trajectory) of the plan, `concurrency` sessions at a time."""
    units = [(c.user_id, plan.trajectories[i]) for c in plan.conditions for i in c.trajectories]
    rep = IngestReport(sessions=len(units))
    lat: list[float] = []
    lock = threading.Lock()
    done = [0]

    def send(unit: tuple[str, Trajectory]) -> None:
        user, traj = unit
        with httpx.Client(timeout=1800.0, trust_env=False) as client:
            for body in trajectory_adds(user, traj.instance_id, traj, chunk, f"replay:{user}:{traj.instance_id}"):
                try:
                    err, dt = post_add(client, srv, body)
                except Exception as exc:  # noqa: BLE001 - recorded, the run goes on
                    err, dt = f"{user} {traj.instance_id}: {type(exc).__name__}: {exc}", 0.0
                with lock:
                    rep.chunks += 1
                    rep.messages += len(body["messages"])
                    if err:
                        rep.errors.append(err)
                    else:
                        lat.append(dt)
        with lock:
            done[0] += 1
            if done[0] % max(1, len(units) // 20) == 0 or done[0] == len(units):
                log(f"  ingest {done[0]}/{len(units)} sessions, {rep.messages:,} messages, "
                    f"{time.perf_counter() - t0:.0f} s, {len(rep.errors)} errors")

    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(send, units))
    rep.wall_s = time.perf_counter() - t0
    rep.add_p50_ms, rep.add_p95_ms = (None if not lat else percentile([x * 1000 for x in lat], q) for q in (50, 95))
    rep.server_restarts = srv.restarts
    return rep


def wait_settled(data_dir: str, timeout_s: float) -> dict[str, Any]:
    """Let the server's background compactor finish before timing Searches (read from
    outside, as eval.load.latency does); best effort."""
    if timeout_s <= 0:
        return {"skipped": True}
    try:
        return wait_compacted(data_dir, timeout_s)
    except Exception as exc:  # noqa: BLE001 - a storage layout we cannot read: just go on
        return {"error": f"{type(exc).__name__}: {exc}"}
