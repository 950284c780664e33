"""A trial for issue 53's fifth item, measured out of fold on the training data; nothing ships:
can one learned decision over a Search's first candidates tell "something related is in
memory" from "nothing is", well enough to answer empty where nothing is, at the issue's cost
cap (a gold that would rank in the first 5 emptied for at most 1% of answerable queries)?

    python -m train.ranker.abstain_trial <the ranker step's data arguments> --out FILE

It takes the shipped model's feature list and grid point (its card), scores every training
query out of fold (each repository and dated project held out, as `train.ranker.train`
does), calibrates the scores into P(related) and reads each query's answer as a Search would
see it: the P of its first candidates, their gaps, the best BM25 and cosine. Examples:
- answerable: a query with a related experience among its candidates;
- nothing related, as recorded: queries asked where nothing related was in memory (sessions
  before any related one; past-fix reports asked of another repository's history);
- nothing related, made: every answerable query again without its related candidates. This
  approximates "the same memory without its gold": the other candidates keep the scores they
  had beside it (every feature of a candidate is its own, but a lexical score normalised over
  the candidates would move).
A logistic regression over those readings is scored by the same folds. Its threshold is the
highest at which at most 1% of the answerable queries whose gold ranks in the first 5 are
emptied, chosen on all folds' out-of-fold probabilities (the rule, written here before the
run); the figure it is compared with is the same cap on the first candidate's P alone.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from codemem.ranking.learned import model_card
from eval._provenance import provenance, write_result
from train.ranker.featureset import CANDIDATES
from train.ranker.train import (
    KINDS,
    Query,
    fit_platt,
    load_commits,
    load_sessions,
    loro,
    platt,
    repository_folds,
)

COST_CAP = 0.01  # answerable queries with a gold in the first 5 that may be emptied
DEPTH = 5
READINGS = ("p1", "p2", "p3", "gap12", "gap13", "mean5", "related5", "candidates", "bm25", "cosine")


def reading(p: np.ndarray, bm25: np.ndarray, cosine: np.ndarray) -> list[float]:
    """What a Search sees of its answer, before deciding: its candidates' P(related), best first."""
    top = np.sort(p)[::-1]
    padded = np.concatenate([top, np.zeros(max(0, DEPTH - len(top)))])
    return [padded[0], padded[1], padded[2], padded[0] - padded[1], padded[0] - padded[2], float(padded[:DEPTH].mean()),
            float((padded[:DEPTH] >= 0.5).sum()), float(np.log1p(len(p))),
            float(bm25.max()) if len(bm25) else -1.0, float(cosine.max()) if len(cosine) else -2.0]


def gold_rank(q: Query, p: np.ndarray) -> int | None:
    """Where the query's best-graded related candidate ranks (1-based), or None."""
    if q.y.max() <= 0:
        return None
    order = np.argsort(-p, kind="stable")
    return int(np.nonzero(q.y[order] == q.y.max())[0][0]) + 1


@dataclass(frozen=True)
class Example:
    repo: str
    kind: str
    case: str  # ANSWERABLE, RECORDED or REMOVED
    x: list[float]  # its reading
    rank: int | None = None  # an answerable query's gold's rank

    @property
    def at_risk(self) -> bool:
        """An answerable query whose gold ranks in the first 5: what the cost cap protects."""
        return self.case == ANSWERABLE and self.rank is not None and self.rank <= DEPTH


ANSWERABLE, RECORDED, REMOVED = "answerable", "nothing related, recorded", "nothing related, gold removed"


def examples(every: Sequence[Query], probabilities: Sequence[np.ndarray]) -> list[Example]:
    rows: list[Example] = []
    for q, p in zip(every, probabilities, strict=True):
        if q.related == 0:
            rows.append(Example(q.repo, q.kind, RECORDED, reading(p, q.bm25, q.cosine)))
        elif q.y.max() > 0:
            rows.append(Example(q.repo, q.kind, ANSWERABLE, reading(p, q.bm25, q.cosine), gold_rank(q, p)))
            keep = q.y == 0
            if keep.any():
                rows.append(Example(q.repo, q.kind, REMOVED, reading(p[keep], q.bm25[keep], q.cosine[keep])))
    return rows


def out_of_fold(rows: list[Example], folds: list[set[str]]) -> np.ndarray:
    x = np.asarray([r.x for r in rows], dtype=np.float64)
    y = np.asarray([r.case == ANSWERABLE for r in rows], dtype=int)
    out = np.zeros(len(rows))
    for fold in folds:
        held = np.asarray([r.repo in fold for r in rows])
        if not held.any():
            continue
        scale = StandardScaler().fit(x[~held])
        model = LogisticRegression(C=1.0, max_iter=2000).fit(scale.transform(x[~held]), y[~held])
        out[held] = model.predict_proba(scale.transform(x[held]))[:, 1]
    return out


def threshold(score: np.ndarray, rows: list[Example]) -> float:
    """The highest cut at which at most `COST_CAP` of the answerable queries with a gold in the
    first 5 score below it."""
    at_risk = np.sort(np.asarray([s for s, r in zip(score, rows, strict=True) if r.at_risk]))
    allowed = int(np.floor(COST_CAP * len(at_risk)))
    return float(at_risk[allowed]) if len(at_risk) else 0.0


def report(score: np.ndarray, cut: float, rows: list[Example]) -> dict[str, object]:
    out: dict[str, object] = {"threshold": round(cut, 4)}
    for kind in ("all", *KINDS):
        mine = [(s, r) for s, r in zip(score, rows, strict=True) if kind == "all" or r.kind == kind]
        if not mine:
            continue
        figures: dict[str, object] = {}
        risk = [s for s, r in mine if r.at_risk]
        answerable = [s for s, r in mine if r.case == ANSWERABLE]
        figures["cost: gold in the first 5 emptied"] = _share(risk, cut, len(risk))
        figures["answerable emptied (gold anywhere)"] = _share(answerable, cut, len(answerable))
        for case in (RECORDED, REMOVED):
            absent = [s for s, r in mine if r.case == case]
            figures[f"saving: {case} answered empty"] = _share(absent, cut, len(absent))
        out[kind] = figures
    return out


def _share(scores: Sequence[float], cut: float, n: int) -> dict[str, object]:
    emptied = sum(s < cut for s in scores)
    return {"share": round(emptied / n, 3) if n else None, "of": n}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--signals", type=Path, action="append", default=[])
    ap.add_argument("--commits", type=Path, action="append", default=[])
    ap.add_argument("--stores", type=Path, default=None)
    ap.add_argument("--projects", type=Path, action="append", default=[])
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    prov = provenance("train.ranker.abstain_trial", argv)
    card = model_card()
    features = CANDIDATES[card["ship_rule"]["shipped"]]
    params = {k: card["params"][k] for k in ("num_leaves", "n_estimators", "weighting")}
    every = ([q for p in args.signals for q in load_sessions(p)] + [q for p in args.commits for q in load_commits(p, args.stores)]
             + [q for p in args.projects for q in load_sessions(p, kind="project", questions=args.questions)])
    folds = repository_folds(every)
    held = loro(every, params, features, folds)
    score = np.concatenate(held)
    a, b = fit_platt(score, np.concatenate([(q.y > 0).astype(float) for q in every]))
    probabilities = [platt(s, a, b) for s in held]
    rows = examples(every, probabilities)
    learned = out_of_fold(rows, folds)
    first = np.asarray([r.x[0] for r in rows])
    result = {
        "model": card["model_id"], "params": params, "readings": list(READINGS), "cost_cap": COST_CAP,
        "examples": {case: sum(r.case == case for r in rows) for case in (ANSWERABLE, RECORDED, REMOVED)},
        "folds": len(folds),
        "learned decision": report(learned, threshold(learned, rows), rows),
        "first candidate's P alone": report(first, threshold(first, rows), rows),
        "note": "out of fold on the training data (not validation); the cut is chosen on the same out-of-fold "
                "probabilities it is reported on, so the cost at the cut is in-sample by construction; the "
                "savings are what the cut buys. Nothing ships from this trial.",
    }
    write_result(args.out, result, prov)
    print(json.dumps({k: v for k, v in result.items() if k in ("examples", "learned decision", "first candidate's P alone")},
                     indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
