"""Nothing acknowledged is lost at scale: a long multi-user ingest through HTTP Add into one
`codemem serve` that is killed (SIGKILL) again and again at random points and restarted on
the same data directory.

    python -m eval.load.kill [--users 10] [--trajectories N] [--concurrency 8] [--chunk 34]
                             [--kill-every 20,90] [--seed 0] [--out eval/results/kill.json]

Every user gets the trajectories of SWE-ContextBench Lite (all 300 by default, ~7.6M tokens
a user), each one session, `--chunk` messages an Add, `--concurrency` sessions at a time
across all users. A killer sends SIGKILL to the server's process group after a random wait
drawn from `--kill-every` (seconds), then restarts it; a client whose request was cut off
sends it again once the server is back, with the same request_id, as a platform retries.
When every Add is acknowledged the server is stopped and the data directory opened afresh
(as a restarted server opens it): every acknowledged Add must be there whole (each of its
messages once), and none twice. Then a restarted server answers a Search of each user.
Writes `eval/results/kill.json`.
"""

from __future__ import annotations

import argparse
import json
import random
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from eval._paths import RESULTS, SWE_LITE
from eval._provenance import provenance, write_result
from eval._server import Server, running_server, shield_from_stray_sigterm
from eval.replay.data import Trajectory, iter_trajectories, load_tasks
from eval.replay.ingest import post_add, trajectory_adds
from eval.replay.metrics import CHARS_PER_TOKEN


def log(msg: str) -> None:
    print(f"[kill {time.strftime('%H:%M:%S')}] {msg}", flush=True)


class Killer:
    """SIGKILLs the server after random waits and restarts it, until stopped."""

    def __init__(self, srv: Server, low_s: float, high_s: float, seed: int) -> None:
        self.srv, self.low_s, self.high_s = srv, low_s, high_s
        self.kills: list[dict[str, float]] = []
        self._rng = random.Random(seed)
        self._stop = threading.Event()
        self._t0 = time.perf_counter()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._rng.uniform(self.low_s, self.high_s)):
            at = time.perf_counter() - self._t0
            self.srv.kill()
            t0 = time.perf_counter()
            self.srv.revive()
            self.kills.append({"at_s": round(at, 1), "restart_s": round(time.perf_counter() - t0, 1)})
            log(f"killed at {at:.0f} s, back after {self.kills[-1]['restart_s']} s")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def stored_requests(data_dir: str) -> tuple[Counter[str], Counter[str]]:
    """How many message rows each request_key has in the data directory, opened afresh: as
    the service reads them (through the scalar indexes), and by a scan of every fragment
    with no index, which tells a row lost from one hidden from the indexes."""
    from codemem.encoders import ShippedEmbedder
    from codemem.store.lance import Store

    store = Store(data_dir, (shipped := ShippedEmbedder()).name, shipped.dim)
    read = Counter(str(r["request_key"]) for r in store.rows("kind = 'message'", ["request_key"], limit=100_000_000))
    scan = store.table.to_lance().scanner(columns=["request_key"], filter="kind = 'message'", use_scalar_index=False)
    return read, Counter(str(key) for key in scan.to_table().column("request_key").to_pylist())


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=SWE_LITE)
    ap.add_argument("--users", type=int, default=10)
    ap.add_argument("--trajectories", type=int, default=None, help="only the first N trajectories per user")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--chunk", type=int, default=34)
    ap.add_argument("--kill-every", default="20,90", help="seconds between kills: LOW,HIGH (uniform)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=RESULTS / "kill.json")
    args = ap.parse_args(argv)
    prov = provenance("eval.load.kill", argv)
    shield_from_stray_sigterm()
    from codemem.store.schema import key_of

    low, high = (float(x) for x in args.kill_every.split(","))
    trajectories: list[Trajectory] = list(iter_trajectories(args.data, "default"))[: args.trajectories]
    tokens = sum(len(m.content) for t in trajectories for m in t.messages) / CHARS_PER_TOKEN
    users = [f"kill-{u:03d}" for u in range(args.users)]
    units = [(u, t) for t in trajectories for u in users]  # every user's sessions interleaved
    log(f"{args.users} users x {len(trajectories)} trajectories, {tokens * args.users / 1e6:.1f}M tokens")

    acked: dict[str, int] = {}  # request_key -> messages in the Add
    errors: list[str] = []
    lock = threading.Lock()

    def send(unit: tuple[str, Trajectory]) -> None:
        user, traj = unit
        with httpx.Client(timeout=1800.0, trust_env=False) as client:
            for body in trajectory_adds(user, traj.instance_id, traj, args.chunk, traj.instance_id):
                err: str | None = "not sent"
                for _ in range(20):  # the server may be down for a while: the platform keeps retrying
                    try:
                        err, _ = post_add(client, srv, body)
                        break
                    except Exception as exc:  # noqa: BLE001 - killed mid-request: send it again
                        err = f"{type(exc).__name__}: {exc}"
                        time.sleep(2.0)
                with lock:
                    if err is None:
                        acked[key_of(user, body["request_id"])] = len(body["messages"])
                    else:
                        errors.append(f"{user} {body['request_id']}: {err}")

    searches: dict[str, int] = {}
    with running_server(keep_data=True) as srv:
        killer = Killer(srv, low, high, args.seed)
        t0 = time.perf_counter()
        try:
            with ThreadPoolExecutor(args.concurrency) as pool:
                list(pool.map(send, units))
        finally:
            killer.stop()
        wall = time.perf_counter() - t0
        log(f"ingest done in {wall:.0f} s, {len(killer.kills)} kills, {len(acked)} Adds acknowledged")
        srv.kill()  # the last one: nothing is flushed on the way out
        stored, scanned = stored_requests(srv.data_dir)
        srv.revive()
        task = load_tasks(args.data)[0]
        with httpx.Client(base_url=srv.url, timeout=600, trust_env=False) as client:
            for user in users:
                r = client.post("/search", json={"user_id": user, "query": task.query, "top_k": 10})
                searches[user] = len(r.json().get("data", [])) if r.status_code == 200 else -r.status_code
        data_dir = srv.data_dir
    lost = [k for k, n in acked.items() if stored.get(k, 0) < n]
    doubled = [k for k, n in acked.items() if stored.get(k, 0) > n]
    result: dict[str, Any] = {
        "users": args.users, "trajectories": len(trajectories), "tokens_total": round(tokens * args.users),
        "chunk": args.chunk, "concurrency": args.concurrency, "kill_every_s": [low, high], "seed": args.seed,
        "wall_s": round(wall, 1), "add_tokens_per_s": round(tokens * args.users / wall),
        "kills": killer.kills, "kill_count": len(killer.kills), "server_restarts": srv.restarts,
        "adds_sent": sum(-(-len(t.messages) // args.chunk) for _, t in units),
        "acknowledged": len(acked), "errors": errors[:20], "error_count": len(errors),
        "acknowledged_lost": len(lost), "lost_examples": lost[:10],
        "acknowledged_stored_twice": len(doubled), "stored_requests": len(stored),
        # Lost to the service's reads but found by a scan of every fragment: hidden by an index.
        "stored_requests_by_scan": len(scanned), "lost_but_scanned": sum(scanned.get(k, 0) >= acked[k] for k in lost),
        "search_items_per_user_after_restart": searches,
    }
    write_result(args.out, result, prov)
    log(json.dumps({k: v for k, v in result.items() if k not in ("kills", "provenance")}))
    import shutil

    shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
