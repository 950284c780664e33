"""What this checkout costs against a baseline commit, side by side in one run on one machine.

    python -m eval.load.versus --baseline 97be416 --out eval/results/versus-97be416.json

Machines here differ by 1.5x in speed, and one machine's speed drifts with its load, so a
cost target ("Search p95 at most 1.2x the baseline's") is only read from both sides measured
in one run, in turn. Each side runs from its own tree: the baseline from a `git worktree` of
its commit (removed afterwards), this side from the checkout; the same interpreter and
packages run both, and each side's harness is its own tree's. Per round, the baseline first:

- `eval.load.scale --users U`: U users, each all 300 SWE-ContextBench Lite trajectories,
  through HTTP Add into one server. Read from it: the first user's ingest wall time (the 300
  trajectories into an empty store), Add tokens per second over the U users, the server's
  anonymous memory after the last user and `--idle-s` seconds idle, and Search p50 / p95 of
  the first user's 62 labelled tasks after that idle (a store of U users);
- `eval.load.cli_latency`: a cold `codemem search` (a fresh process) p50, over this
  repository's last 40 commits imported by `codemem ingest-git`.

A figure is the median over rounds; a ratio is this side's over the baseline's. The targets
are issue 55's. Each side's full results are kept, uncommitted, under
`eval/results/tmp/versus-<baseline>/`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from eval._paths import RESULTS, SWE_LITE
from eval._provenance import provenance, write_result
from eval._server import REPO_ROOT

# Figure -> (where it is read from a side's results, the target ratio, whether higher is better).
FIGURES: dict[str, tuple[Callable[[dict[str, Any]], float], float, bool]] = {
    "ingest_300_trajectories_s": (lambda r: r["scale"]["checkpoints"][0]["ingest"]["wall_s"], 1.5, False),
    "add_tokens_per_s": (lambda r: r["scale"]["summary"]["add_tokens_per_s_mean"], 0.8, True),
    "idle_rss_anon_gb": (lambda r: r["scale"]["checkpoints"][-1]["memory"]["idle_rss_anon_gb"], 1.2, False),
    "search_p50_ms": (lambda r: r["scale"]["checkpoints"][-1]["search"]["p50_ms"], 0.0, False),
    "search_p95_ms": (lambda r: r["scale"]["checkpoints"][-1]["search"]["p95_ms"], 1.2, False),
    "search_hit1": (lambda r: r["scale"]["checkpoints"][-1]["search"]["hit1"], 0.0, True),
    "cold_search_p50_s": (lambda r: r["cli"]["cold_search"]["p50_s"], 1.1, False),
}


def run_side(root: Path, out: Path, users: int, idle_s: float) -> dict[str, Any]:
    """Both measurements of one side, run from `root`'s own code."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "eval.load.scale", "--data", str(SWE_LITE), "--users", str(users),
                    "--idle-s", str(idle_s), "--out", str(out / "scale.json")], cwd=root, env=env, check=True)
    subprocess.run([sys.executable, "-m", "eval.load.cli_latency", "--repo", str(REPO_ROOT),
                    "--out", str(out / "cli")], cwd=root, env=env, check=True)
    return {"scale": json.loads((out / "scale.json").read_text()),
            "cli": json.loads((out / "cli.json").read_text()),
            "wall_s": round(time.monotonic() - started, 1)}


def compare(rounds: list[dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """Each figure's median per side, the ratio, and whether its target is met."""
    out: dict[str, Any] = {}
    for name, (read, target, higher) in FIGURES.items():
        base = statistics.median(read(r["baseline"]) for r in rounds)
        mine = statistics.median(read(r["current"]) for r in rounds)
        ratio = round(mine / base, 3) if base else None
        row: dict[str, Any] = {"baseline": base, "current": mine, "ratio": ratio,
                               "per_round": [[read(r["baseline"]), read(r["current"])] for r in rounds]}
        if target and ratio is not None:
            row["target"] = f"{'>=' if higher else '<='} {target}x"
            row["met"] = ratio >= target if higher else ratio <= target
        out[name] = row
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", required=True, help="the baseline commit")
    ap.add_argument("--users", type=int, default=4)
    ap.add_argument("--idle-s", type=float, default=30.0)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--out", type=Path, default=None, help="default: eval/results/versus-<baseline>.json")
    args = ap.parse_args(argv)
    prov = provenance("eval.load.versus", argv)
    baseline = subprocess.run(["git", "rev-parse", "--short", args.baseline], cwd=REPO_ROOT, check=True,
                              capture_output=True, text=True).stdout.strip()
    out = args.out or RESULTS / f"versus-{baseline}.json"
    sides = RESULTS / "tmp" / f"versus-{baseline}"
    rounds: list[dict[str, dict[str, Any]]] = []
    with tempfile.TemporaryDirectory(prefix="codemem-versus-") as tmp:
        tree = Path(tmp) / baseline
        subprocess.run(["git", "worktree", "add", "--detach", "--quiet", str(tree), baseline], cwd=REPO_ROOT, check=True)
        try:
            for i in range(args.rounds):
                rounds.append({
                    "baseline": run_side(tree, sides / f"round{i}-baseline", args.users, args.idle_s),
                    "current": run_side(REPO_ROOT, sides / f"round{i}-current", args.users, args.idle_s),
                })
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=REPO_ROOT, check=False)
    result = {
        "baseline": baseline, "users": args.users, "idle_s": args.idle_s, "rounds": args.rounds,
        "figures": compare(rounds),
        "wall_s": {side: [r[side]["wall_s"] for r in rounds] for side in ("baseline", "current")},
        "sides": str(sides.relative_to(REPO_ROOT)),
    }
    write_result(out, result, prov)
    for name, row in result["figures"].items():
        print(f"{name:28s} {row['baseline']!s:>10} {row['current']!s:>10} {row['ratio']!s:>7} {row.get('target', '')} "
              f"{'' if 'met' not in row else ('met' if row['met'] else 'NOT met')}")


if __name__ == "__main__":
    main()
