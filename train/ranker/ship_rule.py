"""The ship rule: which candidate feature list `make train` ships, decided out of fold.

Written in `train/ranker/README.md` ("The ship rule") before the run it decides. Every candidate
(`train.ranker.featureset.CANDIDATES`) is scored on the same queries, each held out of the fit
that scores it; the figures are paired by query against the reference (today's list retrained
on the same data). A candidate passes when:

1. over all ranked queries its MRR is at most `MRR_MARGIN` below the reference's;
2. in each kind with at least `MIN_KIND` queries its hit@1 is at most `HIT1_MARGIN` below;
3. its MRR over all queries is above that of its own best single feature, chosen out of fold;
4. where it adds features, what they are for gains, with the 95% paired-bootstrap interval of
   the gain above 0 (`featureset.PURPOSE`).

Rules 1-3 are point estimates on purpose (a candidate equal to the reference must not fail on
noise); every difference is reported with its interval all the same. Among those that pass,
the highest MRR over all ranked queries ships; where none passes, nothing does.

This module knows queries only as their labels (2, 1 or 0 per candidate) and scores, so that it
can be tested on constructed data (`tests/train/test_ship_rule.py`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

MRR_MARGIN = 0.005
HIT1_MARGIN = 0.02
MIN_KIND = 100
DRAWS = 2000
FIGURES = ("hit@1", "hit@5", "mrr", "useful@1")


def per_query(labels: Sequence[np.ndarray], scores: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """Each query's hit@1, hit@5, reciprocal rank of its first gold (its highest-graded related
    candidates) and useful@1 (the first is related at all), ranking by `scores` (ties keep the
    candidates' order)."""
    out: dict[str, list[float]] = {name: [] for name in FIGURES}
    for y, s in zip(labels, scores, strict=True):
        ordered = y[np.argsort(-s, kind="stable")]
        top = ordered.max() if len(ordered) else 0
        first = int(np.flatnonzero(ordered == top)[0]) + 1 if top > 0 else None
        out["hit@1"].append(float(first == 1))
        out["hit@5"].append(float(first is not None and first <= 5))
        out["mrr"].append(1.0 / first if first else 0.0)
        out["useful@1"].append(float(bool(len(ordered) and ordered[0] > 0)))
    return {name: np.asarray(v) for name, v in out.items()}


def interval(diff: np.ndarray, draws: int = DRAWS, seed: int = 0) -> list[float]:
    """The mean of a paired difference and its 95% bootstrap interval over queries."""
    if not len(diff):
        return [0.0, 0.0, 0.0]
    idx = np.random.default_rng(seed).integers(0, len(diff), size=(draws, len(diff)))
    boot = diff[idx].mean(axis=1)
    return [round(float(diff.mean()), 4), round(float(np.quantile(boot, 0.025)), 4),
            round(float(np.quantile(boot, 0.975)), 4)]


def single_feature_scores(xs: Sequence[np.ndarray], labels: Sequence[np.ndarray], folds: Sequence[Sequence[int]],
                          ) -> tuple[list[np.ndarray], list[int]]:
    """Out-of-fold scores of the best single feature: for each fold (query indices), the
    column of `xs` with the best MRR over the other folds' queries ranks that fold's queries.
    Returns the scores, aligned with `xs`, and each fold's column."""
    n_cols = xs[0].shape[1]
    rr = np.column_stack([per_query(labels, [x[:, j] for x in xs])["mrr"] for j in range(n_cols)])
    scores: list[np.ndarray | None] = [None] * len(xs)
    chosen = []
    for fold in folds:
        held = np.zeros(len(xs), dtype=bool)
        held[list(fold)] = True
        best = int(np.argmax(rr[~held].mean(axis=0))) if (~held).any() else 0
        chosen.append(best)
        for i in fold:
            scores[i] = xs[i][:, best]
    missing = [i for i, s in enumerate(scores) if s is None]
    if missing:
        raise ValueError(f"{len(missing)} queries are in no fold")
    return [s for s in scores if s is not None], chosen


def passed(check: bool | dict[str, bool]) -> bool:
    """A check's verdict: a rule applied once, or to each kind."""
    return check if isinstance(check, bool) else all(check.values())


def decide(labels: Sequence[np.ndarray], kinds: Sequence[str], candidates: Mapping[str, Sequence[np.ndarray]],
           single: Mapping[str, Sequence[np.ndarray]], groups: Mapping[str, Sequence[int]],
           purpose: Mapping[str, tuple[str, str]], reference: str) -> dict[str, Any]:
    """The rule applied to out-of-fold `candidates` (name -> each ranked query's scores), with
    each candidate's best-single-feature scores in `single`, the queries' `kinds`, the named
    `groups` (query indices) a purpose is measured on, and `reference`. Returns every
    candidate's figures, differences, intervals and verdict, and the name shipped (or None)."""
    figs = {name: per_query(labels, scores) for name, scores in candidates.items()}
    ref = figs[reference]
    kind_of = np.asarray(kinds)
    sizes = {k: int((kind_of == k).sum()) for k in sorted(set(kinds))}
    report: dict[str, Any] = {"rule": {"mrr_margin": MRR_MARGIN, "hit1_margin": HIT1_MARGIN, "min_kind": MIN_KIND,
                                       "draws": DRAWS},
                              "reference": reference, "queries": len(labels), "kinds": sizes, "candidates": {}}
    for name, f in figs.items():
        alone = per_query(labels, single[name])
        row: dict[str, Any] = {"all": {k: round(float(v.mean()), 4) for k, v in f.items()},
                               "by_kind": {k: {fig: round(float(f[fig][kind_of == k].mean()), 4) for fig in FIGURES}
                                           for k in sizes},
                               "minus_reference": {"all": {fig: interval(f[fig] - ref[fig]) for fig in ("hit@1", "mrr")},
                                                   **{k: {fig: interval(f[fig][kind_of == k] - ref[fig][kind_of == k])
                                                          for fig in ("hit@1", "mrr")} for k in sizes}},
                               "best_single_feature": {"mrr": round(float(alone["mrr"].mean()), 4),
                                                       "minus": interval(f["mrr"] - alone["mrr"])}}
        checks: dict[str, bool | dict[str, bool]] = {"mrr_vs_reference": bool(f["mrr"].mean() >= ref["mrr"].mean() - MRR_MARGIN),
                  "hit1_by_kind": {k: bool(f["hit@1"][kind_of == k].mean() >= ref["hit@1"][kind_of == k].mean() - HIT1_MARGIN)
                                   for k, n in sizes.items() if n >= MIN_KIND},
                  "beats_best_single_feature": bool(f["mrr"].mean() > alone["mrr"].mean())}
        if name in purpose:
            group, fig = purpose[name]
            sub = np.asarray(groups.get(group, []), dtype=int)
            gain = interval(f[fig][sub] - ref[fig][sub]) if len(sub) else [0.0, 0.0, 0.0]
            row["purpose"] = {"group": group, "figure": fig, "queries": int(len(sub)),
                              "candidate": round(float(f[fig][sub].mean()), 4) if len(sub) else None,
                              "reference": round(float(ref[fig][sub].mean()), 4) if len(sub) else None, "gain": gain}
            checks["purpose_gain_above_0"] = bool(len(sub) and gain[1] > 0)
        row["checks"] = checks
        row["passes"] = all(passed(v) for v in checks.values())
        report["candidates"][name] = row
    passing = [n for n, r in report["candidates"].items() if r["passes"]]
    report["shipped"] = max(passing, key=lambda n: (report["candidates"][n]["all"]["mrr"], n == reference)) if passing else None
    return report
