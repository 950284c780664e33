"""Fit the fusion's agent-session knobs on training data: the weights and rank constant of
the session fusion, the relevance floor, the calibration's coefficients and the quiet
threshold (`DEFAULT_SEARCH`, `codemem/ranking/recipes.py`), from the replayed SWE-bench Verified
sessions that `train.ranker.build_data` records, never from an evaluation set.

    python -m train.ranker.build_data --agent mini=MIRROR --out /work/svr-ranker/signals   # ~20 min
    python -m train.fusion.fit --signals /work/svr-ranker/signals/mini --out eval/results/fusion_train_cv.json

The steps are `eval.replay.relevance_cv`'s, on the training queries instead of the dev tasks:
the grid (`relevance_cv.GRID`) by MRR then hit@1 of the queries with related sessions in
memory, a query's gold being its highest-graded related sessions; the floor by
`relevance_cv.lossless_floor` over an answer's first `ROOM`; the calibration's logistic
regression over the first `relevance_cv.CALIBRATION_DEPTH` sessions of every query (those with nothing related in memory
too: all their rows are "not gold"), its penalty chosen by an inner split. The quiet threshold
is the one answers cannot give here (the replay's memory is not kept, so no answer's tokens
can be counted): the calibrated relevance that best tells a query whose first session is gold
from one whose first is not, Youden's J over every query, as the learned ranker's is chosen.

Leave-one-repository-out: each repository's queries are ranked with the knobs fitted on the
other repositories'; the fit on all of them is what ships. Every figure is on training data.
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from codemem.ranking.recipes import DEFAULT_SEARCH, SearchConfig
from codemem.ranking.relevance import SessionSignals, features, fuse, relevance, runner_up
from eval._paths import RESULTS
from eval._provenance import provenance, write_result
from eval.replay.relevance_cv import (
    CALIBRATION_DEPTH,
    GRID,
    PATHS,
    fit_calibration,
    lossless_floor,
)
from train.ranker.build_data import signals_from

ROOM = 24  # sessions an answer names (`AnswerShape.quiet_experiences`)
TOP = 100  # the ranks counted


@dataclass(frozen=True)
class Query:
    repo: str
    signals: SessionSignals
    gold: frozenset[str]  # the highest-graded related sessions (empty: nothing related in memory)


def load_queries(path: Path) -> list[Query]:
    out = []
    for line in (path / "queries.jsonl").read_text().splitlines():
        rec = json.loads(line)
        labels: dict[str, int] = rec["labels"]
        top = max(labels.values(), default=0)
        out.append(Query(rec["repo"], signals_from(rec["signals"]),
                         frozenset(k for k, g in labels.items() if g == top and top > 0)))
    return out


def order(q: Query, config: SearchConfig) -> tuple[list[str], dict[str, float]]:
    scores = fuse(q.signals, config)
    return sorted(scores, key=lambda k: (-scores[k], k)), scores


def figures(queries: Sequence[Query], config: SearchConfig) -> dict[str, float]:
    """hit@1, hit@5 and MRR over the queries with a related session in memory."""
    ranks = []
    for q in queries:
        if q.gold:
            keys, _ = order(q, config)
            ranks.append(next((i for i, k in enumerate(keys[:TOP], 1) if k in q.gold), None))
    n = max(len(ranks), 1)
    return {"hit@1": round(sum(r == 1 for r in ranks) / n, 3),
            "hit@5": round(sum(r is not None and r <= 5 for r in ranks) / n, 3),
            "mrr": round(sum(1 / r for r in ranks if r) / n, 3), "queries": len(ranks)}


def fit_fusion(queries: Sequence[Query]) -> SearchConfig:
    best: tuple[tuple[float, float], SearchConfig] | None = None
    for combo in itertools.product(*GRID.values()):
        config = DEFAULT_SEARCH.replace({PATHS[k]: v for k, v in zip(GRID, combo, strict=True)})
        f = figures(queries, config)
        if best is None or (f["mrr"], f["hit@1"]) > best[0]:
            best = ((f["mrr"], f["hit@1"]), config)
    assert best is not None
    return best[1]


def fit_floor(queries: Sequence[Query], config: SearchConfig) -> float:
    return lossless_floor([(order(q, config)[1], q.gold) for q in queries], ROOM)


def calibration_rows(queries: Sequence[Query], config: SearchConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x, y, task = [], [], []
    for i, q in enumerate(queries):
        keys, scores = order(q, config)
        others = runner_up(scores)
        for key in keys[:CALIBRATION_DEPTH]:
            x.append(features(q.signals, key, scores[key], others[key]))
            y.append(key in q.gold)
            task.append(i)
    return np.asarray(x, dtype=float), np.asarray(y, dtype=float), np.asarray(task)


def first_relevance(q: Query, config: SearchConfig) -> tuple[float, bool]:
    """The calibrated relevance of the query's first session, and whether it is gold."""
    keys, scores = order(q, config)
    if not keys:
        return 0.0, False
    others = runner_up(scores)
    return relevance(q.signals, keys[0], scores[keys[0]], others[keys[0]], config), keys[0] in q.gold


def fit_quiet_below(queries: Sequence[Query], config: SearchConfig) -> float:
    """Youden's J: loud when the first session is gold, minus loud when it is not."""
    rows = [first_relevance(q, config) for q in queries]
    p = np.asarray([r for r, _ in rows])
    gold = np.asarray([g for _, g in rows])
    cuts = np.unique(np.round(p, 2))
    if gold.all() or not gold.any():
        return DEFAULT_SEARCH.calibration.quiet_below
    j = [float(np.mean(p[gold] >= c) - np.mean(p[~gold] >= c)) for c in cuts]
    return float(cuts[int(np.argmax(j))])


def fit(queries: Sequence[Query]) -> tuple[SearchConfig, dict[str, Any]]:
    related = [q for q in queries if q.gold]
    config = fit_fusion(related)
    config = config.replace({"fusion.relevance_floor": fit_floor(related, config)})
    coefficients, l2 = fit_calibration(*calibration_rows(queries, config))
    config = config.replace({"calibration.coefficients": coefficients})
    config = config.replace({"calibration.quiet_below": fit_quiet_below(queries, config)})
    return config, {"chosen": {name: config.value_at(path) for name, path in PATHS.items()}, "calibration_l2": l2}


def quiet_figures(queries: Sequence[Query], config: SearchConfig) -> dict[str, float | None]:
    """How often an answer is quiet when nothing related is in memory, and loud when its
    first session is gold."""
    rows = [(q, *first_relevance(q, config)) for q in queries]
    absent = [p for q, p, _ in rows if not q.gold]
    gold_first = [p for q, p, g in rows if g]
    threshold = config.calibration.quiet_below
    return {"quiet_when_nothing_related": share([p < threshold for p in absent]),
            "loud_when_first_gold": share([p >= threshold for p in gold_first])}


def share(flags: Sequence[bool]) -> float | None:
    return round(sum(flags) / len(flags), 3) if flags else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--signals", type=Path, required=True, help="a train.ranker.build_data --out DIR")
    ap.add_argument("--out", type=Path, default=RESULTS / "fusion_train_cv.json")
    args = ap.parse_args(argv)
    prov = provenance("train.fusion.fit", argv)
    queries = load_queries(args.signals)
    repos = sorted({q.repo for q in queries})
    held: dict[str, Any] = {}
    ranked_held: list[Query] = []
    configs: list[SearchConfig] = []
    for repo in repos:
        rest = [q for q in queries if q.repo != repo]
        config, info = fit(rest)
        mine = [q for q in queries if q.repo == repo]
        held[repo] = {**info, "held_out": figures(mine, config), "quiet": quiet_figures(mine, config)}
        ranked_held += mine
        configs += [config] * len(mine)
        print(repo, held[repo]["chosen"], held[repo]["held_out"], flush=True)
    pooled = [figures([q], c) for q, c in zip(ranked_held, configs, strict=True) if q.gold]
    shipped, info = fit(queries)
    result = {
        "data": {"queries": len(queries), "with_related": sum(bool(q.gold) for q in queries),
                 "by_repo": {r: sum(q.repo == r for q in queries) for r in repos}, "signals": str(args.signals)},
        "held_out": {k: round(float(np.mean([p[k] for p in pooled])), 3) for k in ("hit@1", "hit@5", "mrr")},
        "in_sample": {**info, **figures(queries, shipped), "quiet": quiet_figures(queries, shipped)},
        "default_search": {**figures(queries, DEFAULT_SEARCH), "quiet": quiet_figures(queries, DEFAULT_SEARCH)},
        "folds": held,
    }
    print(json.dumps({k: result[k] for k in ("data", "held_out", "in_sample", "default_search")}, indent=1))
    write_result(args.out, result, prov)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
