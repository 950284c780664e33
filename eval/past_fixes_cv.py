"""Choose the commit-only search weights (``title_weight``, ``subject_weight``) by
leave-one-repository-out cross-validation on past-fixes-dev, and report the held-out
figures next to the in-sample ones.

    python -m eval.past_fixes --only ripgrep,caddy,preact,tokio --store DIR   # imports, once
    python -m eval.past_fixes_cv --store DIR [--only ripgrep,caddy,preact,tokio]

The retrievers run once per task (``Memory.signals``, which computes the commit rankings
whatever their weights); every grid point is then a pure re-fusion (``relevance.fuse``) of
the session rankings. A task's rank is its best gold experience's (a change whose commits
include a gold SHA) among the fused experiences. For each repository, the grid point with
the best MRR (then hit@1, then the smaller weights) on the other repositories is scored on
it; "in-sample" is the best point on all of them (what ``DEFAULT_SEARCH`` ships when it is
the same point). The other search knobs stay as ``DEFAULT_SEARCH`` has them (tuned on
agent sessions by ``eval.relevance_cv``). Writes ``eval/results/tmp/past_fixes_cv.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path
from typing import Any

from codemem.config import Settings
from codemem.memory import Memory
from codemem.ranking.recipes import DEFAULT_SEARCH, SearchConfig
from codemem.ranking.relevance import SessionSignals, fuse
from codemem.store.schema import key_of
from eval._paths import RESULTS
from eval._provenance import finish, provenance
from eval.past_fixes import TASKS, metrics

GRID = {"title_weight": (0.0, 1.0, 2.0, 3.0, 4.0, 6.0), "subject_weight": (0.0, 1.0, 2.0, 3.0, 4.0, 6.0)}


def collect(store: Path, name: str, tasks: list[dict[str, Any]]) -> list[tuple[SessionSignals, set[str]]]:
    """Each task's signals and gold session keys, from one repository's kept import."""
    memory = Memory(Settings.from_env({}, data_dir=str(store / name), compact_interval_s=0))
    try:
        user_id = f"pastfixes-{name}"
        cards = memory.store.user_rows(key_of(user_id), "card", ["session_key", "metadata"])
        commits = {str(c["session_key"]): set(json.loads(str(c["metadata"])).get("commits", [])) for c in cards}
        out = []
        for task in tasks:
            gold = {key for key, shas in commits.items() if shas & set(task["gold_commits"])}
            signals, _ = memory.signals(user_id, task["problem_statement"], DEFAULT_SEARCH, DEFAULT_SEARCH.candidates)
            out.append((signals, gold))
        return out
    finally:
        memory.close()


def rank(signals: SessionSignals, gold: set[str], config: SearchConfig) -> int | None:
    scores = fuse(signals, config)
    order = sorted(scores, key=lambda k: -scores[k])[:10]
    return next((i for i, key in enumerate(order, 1) if key in gold), None)


def score(rows: list[tuple[SessionSignals, set[str]]], config: SearchConfig) -> dict[str, float]:
    return metrics([rank(s, g, config) for s, g in rows])


def best(rows: list[tuple[SessionSignals, set[str]]], grid: list[SearchConfig]) -> SearchConfig:
    def key(c: SearchConfig) -> tuple[float, float, float]:
        m = score(rows, c)
        return m["mrr"], m["hit@1"], -(c.title_weight + c.subject_weight)
    return max(grid, key=key)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", type=Path, required=True, help="an eval.past_fixes --store DIR")
    ap.add_argument("--only", default="ripgrep,caddy,preact,tokio")
    ap.add_argument("--tasks", type=Path, default=TASKS)
    ap.add_argument("--out", type=Path, default=RESULTS / "tmp" / "past_fixes_cv.json")
    args = ap.parse_args(argv)
    prov = provenance("eval.past_fixes_cv", argv)
    names = [n for n in args.only.split(",") if n]
    tasks = json.loads(args.tasks.read_text())
    rows = {name: collect(args.store, name, [t for t in tasks if t["repo"].split("/")[1] == name]) for name in names}
    grid = [DEFAULT_SEARCH.replace(**dict(zip(GRID, values, strict=True))) for values in itertools.product(*GRID.values())]

    folds: dict[str, Any] = {}
    held: list[int | None] = []
    for name in names:
        train = [r for other in names if other != name for r in rows[other]]
        chosen = best(train, grid)
        held += [rank(s, g, chosen) for s, g in rows[name]]
        folds[name] = {"chosen": {k: getattr(chosen, k) for k in GRID}, "train": score(train, chosen),
                       "held_out": score(rows[name], chosen)}
        print(f"held out {name}: chose {folds[name]['chosen']}, train {folds[name]['train']}, "
              f"held out {folds[name]['held_out']}", flush=True)
    everything = [r for name in names for r in rows[name]]
    fitted = best(everything, grid)
    result = {
        "provenance": finish(prov),
        "tasks": len(everything),
        "held_out": metrics(held),
        "in_sample": {"chosen": {k: getattr(fitted, k) for k in GRID}, **score(everything, fitted)},
        "shipped": {"values": {k: getattr(DEFAULT_SEARCH, k) for k in GRID}, **score(everything, DEFAULT_SEARCH)},
        "without_commit_signals": score(everything, DEFAULT_SEARCH.replace(title_weight=0.0, subject_weight=0.0)),
        "folds": folds,
    }
    print(json.dumps({k: result[k] for k in ("held_out", "in_sample", "shipped", "without_commit_signals")}, indent=1))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
