"""Choose the commit-only search knobs (``title_weight``, ``subject_weight``,
``title_prose_words``, then ``since_weight``) on a set of past-fix tasks, with
leave-one-repository-out figures next to the fit on all of them.

    # the shipped knobs: the fit on the training tasks (train/past_fixes/build_data.py)
    python -m eval.quality.past_fixes_cv --store /work/svr/store --tasks /work/svr/tasks.json \
        --only sphinx,pytest,xarray,pylint,astropy,sympy --out eval/results/past_fixes_train_cv.json
    # the same procedure on past-fixes-dev, for comparison (its "shipped" row is the validation)
    python -m eval.quality.past_fixes --only ripgrep,caddy,lombok,preact,tokio --store DIR   # imports, once
    python -m eval.quality.past_fixes_cv --store DIR [--only ripgrep,caddy,lombok,preact,tokio]

The retrievers run once per task and value of ``title_prose_words`` (``Memory.signals``,
which computes the commit rankings whatever their weights); every other grid point is a
re-fusion of those rankings. Fusion is linear in its weights, so the grid is searched with
numpy over each ranking's contribution (``relevance.fuse`` with that ranking's weight alone),
a tie counting in the gold's favour; the figures reported are ``relevance.fuse``'s own. A
task's rank is its best gold experience's (a change whose commits include a gold SHA) among
the first 10 fused experiences. For each repository, on the other repositories: the grid
point of the first three knobs with the best MRR (then hit@1, then the smaller weights), the
releases ranking weighing nothing; then, with those, the ``since_weight`` with the best MRR
(then hit@1, then the smaller weight). That choice is scored on the held-out repository;
"in-sample" is the same two steps on all of them (what ``DEFAULT_SEARCH`` ships, from the
training tasks). The releases ranking came last, and fitting its weight alone keeps a fold's
choices to what a fold's tasks can tell apart; for comparison, ``held_out_joint`` chooses
all four knobs in one grid. The other search knobs stay as ``DEFAULT_SEARCH`` has them (tuned on
agent sessions by ``eval.replay.relevance_cv``). Writes ``eval/results/tmp/past_fixes_cv.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from codemem.config import Settings
from codemem.memory import Memory
from codemem.ranking.recipes import DEFAULT_SEARCH, SearchConfig
from codemem.ranking.relevance import SessionSignals, fuse
from codemem.store.schema import key_of
from eval._paths import RESULTS
from eval._provenance import provenance, write_result
from eval.quality.past_fixes import TASKS, metrics

WEIGHTS = {"title_weight": (0.0, 1.0, 2.0, 3.0, 4.0, 6.0), "subject_weight": (0.0, 1.0, 2.0, 3.0, 4.0, 6.0),
           "since_weight": (0.0,)}
SINCE = (0.0, 1.0, 2.0, 3.0, 4.0, 6.0)  # since_weight, chosen after the others
PROSE = (0, 10, 20, 40)  # title_prose_words: 0 is the title alone
KNOBS = (*WEIGHTS, "title_prose_words")
# Where each knob sits in a SearchConfig.
PATHS = {**{k: f"fusion.{k}" for k in WEIGHTS}, "title_prose_words": "retrieval.title_prose_words"}
GridWeights = dict[str, tuple[float, ...]]
TOP = 10  # the ranks counted (a Search's top_k)


@dataclass
class Task:
    signals: dict[int, SessionSignals]  # title_prose_words -> the task's signals
    gold: set[str]


def collect(store: Path, name: str, tasks: list[dict[str, Any]]) -> list[Task]:
    """Each task's signals (one per title_prose_words value) and gold session keys, from one
    repository's kept import."""
    memory = Memory(Settings.from_env({}, overrides={"storage.data_dir": str(store / name), "maintenance.interval_s": 0}))
    try:
        user_id = f"pastfixes-{name}"
        cards = memory.store.user_rows(key_of(user_id), "card", ["session_key", "metadata"])
        commits = {str(c["session_key"]): set(json.loads(str(c["metadata"])).get("commits", [])) for c in cards}
        out = []
        for task in tasks:
            gold = {key for key, shas in commits.items() if shas & set(task["gold_commits"])}
            signals = {}
            for words in PROSE:
                config = DEFAULT_SEARCH.replace({"retrieval.title_prose_words": words})
                signals[words], _ = memory.signals(user_id, task["problem_statement"], config, config.retrieval.candidates)
            out.append(Task(signals, gold))
        return out
    finally:
        memory.close()


def rank(task: Task, config: SearchConfig) -> int | None:
    scores = fuse(task.signals[config.retrieval.title_prose_words], config)
    order = sorted(scores, key=lambda k: -scores[k])[:TOP]
    return next((i for i, key in enumerate(order, 1) if key in task.gold), None)


def score(tasks: list[Task], config: SearchConfig) -> dict[str, float]:
    return metrics([rank(t, config) for t in tasks])


# -- the grid search ----------------------------------------------------------------------

SIGNALS = tuple(DEFAULT_SEARCH.fusion.weights())
_ZERO = {f"fusion.{name}_weight": 0.0 for name in SIGNALS}


def _weight_rows(weights: GridWeights) -> np.ndarray:
    """Every weight combination of the grid, as rows over SIGNALS (the others as shipped)."""
    fixed = DEFAULT_SEARCH.fusion.weights()
    rows = []
    for values in itertools.product(*weights.values()):
        chosen = {**fixed, **{k.removesuffix("_weight"): v for k, v in zip(weights, values, strict=True)}}
        rows.append([chosen[name] for name in SIGNALS])
    return np.array(rows)


def _ranks(task: Task, words: int, weights: np.ndarray) -> np.ndarray:
    """The task's rank (0: not in the first TOP) under each row of `weights`."""
    signals = task.signals[words]
    base = DEFAULT_SEARCH.replace({**_ZERO, "retrieval.title_prose_words": words})
    parts = [fuse(signals, base.replace({f"fusion.{name}_weight": 1.0})) for name in SIGNALS]
    keys = sorted({k for part in parts for k in part})
    if not keys:
        return np.zeros(len(weights), dtype=int)
    contrib = np.array([[part.get(k, 0.0) for k in keys] for part in parts])  # signals x keys
    scores = weights @ contrib  # proportional to fuse's, per weight row
    is_gold = np.array([k in task.gold for k in keys])
    if not is_gold.any():
        return np.zeros(len(weights), dtype=int)
    best_gold = scores[:, is_gold].max(axis=1)
    above = (scores[:, ~is_gold] > best_gold[:, None]).sum(axis=1) + 1
    return np.where((best_gold > 0) & (above <= TOP), above, 0)


class Grid:
    """Every task's rank at every grid point, searched for the best point on some tasks."""

    def __init__(self, tasks: list[Task], weights: GridWeights = WEIGHTS):
        self.names = tuple(weights)
        self.weights = _weight_rows(weights)
        self.points = list(PROSE)
        # tasks x prose points x weight rows
        self.ranks = np.array([[_ranks(t, words, self.weights) for words in self.points] for t in tasks])

    def best(self, which: list[int]) -> SearchConfig:
        """The best grid point on the tasks `which` (none: the shipped configuration)."""
        if not which:
            return DEFAULT_SEARCH
        ranks = self.ranks[which]
        mrr = np.where(ranks > 0, 1.0 / np.maximum(ranks, 1), 0.0).mean(axis=0)
        hit1 = (ranks == 1).mean(axis=0)
        size = self.weights.sum(axis=1)[None, :].repeat(len(self.points), axis=0)
        prose = np.array(self.points)[:, None].repeat(len(self.weights), axis=1)
        keys = [a.ravel() for a in (-prose, -size, np.round(hit1, 9), np.round(mrr, 9))]
        point, row = np.unravel_index(np.lexsort(keys)[-1], mrr.shape)  # the last key sorts first
        words = self.points[point]
        values = dict(zip(SIGNALS, self.weights[row], strict=True))
        return DEFAULT_SEARCH.replace({**{PATHS[k]: float(values[k.removesuffix("_weight")]) for k in self.names},
                                       "retrieval.title_prose_words": words})


def choose(grid: Grid, tasks: list[Task], which: list[int]) -> SearchConfig:
    """The shipped procedure on the tasks `which`: the grid's best point (the releases
    ranking weighing nothing), then the best `since_weight` (MRR, hit@1, the smaller) with it."""
    base = grid.best(which)
    chosen = [tasks[i] for i in which]

    def merit(weight: float) -> tuple[float, float, float]:
        got = score(chosen, base.replace({"fusion.since_weight": weight}))
        return got["mrr"], got["hit@1"], -weight

    return base.replace({"fusion.since_weight": max(SINCE, key=merit)})


def knobs(config: SearchConfig) -> dict[str, float]:
    return {k: config.value_at(PATHS[k]) for k in KNOBS}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", type=Path, required=True, help="an eval.quality.past_fixes --store DIR")
    ap.add_argument("--only", default="ripgrep,caddy,lombok,preact,tokio")
    ap.add_argument("--tasks", type=Path, default=TASKS)
    ap.add_argument("--out", type=Path, default=RESULTS / "tmp" / "past_fixes_cv.json")
    args = ap.parse_args(argv)
    prov = provenance("eval.quality.past_fixes_cv", argv)
    names = [n for n in args.only.split(",") if n]
    tasks = json.loads(args.tasks.read_text())
    rows = {name: collect(args.store, name, [t for t in tasks if t["repo"].split("/")[1] == name]) for name in names}
    everything = [t for name in names for t in rows[name]]
    grid = Grid(everything)
    joint = Grid(everything, {**WEIGHTS, "since_weight": SINCE})
    index = {name: [i for i, t in enumerate(everything) if any(t is r for r in rows[name])] for name in names}

    folds: dict[str, Any] = {}
    held: list[int | None] = []
    held_joint: list[int | None] = []
    for name in names:
        train = [i for other in names if other != name for i in index[other]]
        chosen, chosen_joint = choose(grid, everything, train), joint.best(train)
        held += [rank(t, chosen) for t in rows[name]]
        held_joint += [rank(t, chosen_joint) for t in rows[name]]
        folds[name] = {"chosen": knobs(chosen), "train": score([everything[i] for i in train], chosen),
                       "held_out": score(rows[name], chosen), "joint_chosen": knobs(chosen_joint)}
        print(f"held out {name}: chose {folds[name]['chosen']}, train {folds[name]['train']}, "
              f"held out {folds[name]['held_out']}", flush=True)
    fitted = choose(grid, everything, list(range(len(everything))))
    result = {
        "tasks": len(everything),
        "held_out": metrics(held),
        "held_out_joint": metrics(held_joint),
        "in_sample": {"chosen": knobs(fitted), **score(everything, fitted)},
        "shipped": {"values": knobs(DEFAULT_SEARCH), **score(everything, DEFAULT_SEARCH)},
        "without_commit_signals": score(everything, DEFAULT_SEARCH.replace({
            "fusion.title_weight": 0.0, "fusion.subject_weight": 0.0, "fusion.since_weight": 0.0})),
        "folds": folds,
    }
    print(json.dumps({k: result[k] for k in ("held_out", "held_out_joint", "in_sample", "shipped",
                                             "without_commit_signals")}, indent=1))
    write_result(args.out, result, prov)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
