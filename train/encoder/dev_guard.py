"""The dev guard of the fine-tuned encoder (`README.md`, "The dev guard", written before dev was
scored): each build's models scored once on the dev sets, side by side, query by query.

Dev is small (62 SWE-ContextBench tasks, 21 past-fix reports): it guards against a loss the
training folds cannot see and selects nothing. The tuned encoder ships unless, on SWE-ContextBench
dev (noisy-repo, noisy-all) or on the past-fix dev set, its MRR is lower than MiniLM's with the
95% paired bootstrap interval of the difference entirely below zero.

    python -m train.encoder.dev_guard --replay-minilm R1.json --replay-tuned R2.json \\
        --past-fixes-minilm P1.json --past-fixes-tuned P2.json --out eval/results/encoder-dev-guard.json

The four inputs are `python -m eval.replay` and `python -m eval.quality.past_fixes` results, each
run in a checkout holding one build's models (the tuned one's with `--env CODEMEM_EMBEDDER=tuned`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from eval._provenance import finish, provenance
from eval.replay.metrics import reciprocal_rank
from train.ranker.ship_rule import interval

CONDITIONS = ("noisy-repo", "noisy-all")


def replay_ranks(result: dict[str, Any], condition: str) -> dict[str, float]:
    """Each task's reciprocal rank of its first gold trajectory in codemem's answer."""
    return {q["task"]: reciprocal_rank(q["gold_rank"]) for q in result["queries"]
            if q["system"] == "codemem" and q["condition"] == condition}


def past_fix_ranks(result: dict[str, Any]) -> dict[str, float]:
    """Each report's reciprocal rank of its fixing change in codemem's answer."""
    if not result.get("complete"):
        raise SystemExit("a past-fix result is not complete: every repository must have been scored")
    return {r["instance_id"]: reciprocal_rank(r["codemem_rank"]) for r in result["per_task"]}


def compared(minilm: dict[str, float], tuned: dict[str, float]) -> dict[str, Any]:
    """MRR of each, the paired difference with its 95% bootstrap interval, and the guard's reading."""
    if minilm.keys() != tuned.keys():
        raise SystemExit(f"the two runs scored different queries: {sorted(minilm.keys() ^ tuned.keys())[:5]}")
    keys = sorted(minilm)
    diff = np.array([tuned[k] - minilm[k] for k in keys])
    mean, low, high = interval(diff)
    return {"queries": len(keys), "mrr minilm": round(float(np.mean([minilm[k] for k in keys])), 4),
            "mrr tuned": round(float(np.mean([tuned[k] for k in keys])), 4),
            "difference [mean, 2.5%, 97.5%]": [mean, low, high],
            "tuned better": int((diff > 0).sum()), "minilm better": int((diff < 0).sum()),
            "a loss (interval below 0)": high < 0}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m train.encoder.dev_guard", description=__doc__.split("\n\n")[0])
    for name in ("replay-minilm", "replay-tuned", "past-fixes-minilm", "past-fixes-tuned"):
        ap.add_argument(f"--{name}", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    prov = provenance("train.encoder.dev_guard", argv if argv is not None else sys.argv[1:])
    runs = {name: json.loads(getattr(args, name.replace("-", "_")).read_text())
            for name in ("replay-minilm", "replay-tuned", "past-fixes-minilm", "past-fixes-tuned")}
    sets = {f"SWE-ContextBench dev, {c}": compared(replay_ranks(runs["replay-minilm"], c), replay_ranks(runs["replay-tuned"], c))
            for c in CONDITIONS}
    sets["past fixes dev"] = compared(past_fix_ranks(runs["past-fixes-minilm"]), past_fix_ranks(runs["past-fixes-tuned"]))
    result = {
        "label": "validation (dev, scored once each; a guard, not a selector)",
        "rule": "train/encoder/README.md, 'The dev guard' (written 2026-12-07 before dev was scored)",
        "runs": {name: {"path": str(getattr(args, name.replace("-", "_"))), "provenance": run["provenance"]}
                 for name, run in runs.items()},
        "sets": sets,
        "ships": not any(s["a loss (interval below 0)"] for s in sets.values()),
        "provenance": finish(prov),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: result[k] for k in ("sets", "ships")}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
