"""The nothing-related decision (`codemem.ranking.absence`), learned from the relevance model's
out-of-fold P of every training query; `train.ranker.train` calls it after calibrating, and the
card keeps the decision and its figures.

Examples, each a query's reading as a Search would see it:
- answerable: a query with a related experience among its candidates;
- nothing related, as recorded: queries asked where nothing related was in memory (sessions
  before any related one; past-fix reports asked of another repository's history);
- nothing related, gold removed: every answerable query asked again of its memory without its
  related experiences (`train.ranker.train.without`: every ranking with them taken out and the
  rest moved up, the features computed again, scored by the same fold's model). It is not a
  replay: the others' BM25 scores keep the idf read with the gold in the index.

The logistic regression is scored out of fold on the relevance model's folds (each
repository and dated project held out). The cut of each kind of first candidate
(`absence.kind_of`: a commit, or any other experience) is the highest at which, in every query
kind among those Searches, at most `COST_CAP` of the answerable queries whose gold ranks in the
first 5 are emptied, chosen on those out-of-fold probabilities (the rule, issue 53, written in
`train/ranker/README.md` before the run), so the cost at the cut is in-sample by construction.
The decision that ships is the regression refitted on every example, with those cuts; it
judges only Searches with at least as many candidates as the 1st percentile of its examples
(the fewer candidates of a memory of a handful of experiences are out of its range).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from codemem.ranking.absence import COMMIT, EXPERIENCE, READINGS, Absence, kind_of, reading

if TYPE_CHECKING:
    from train.ranker.train import Query

COST_CAP = 0.01  # answerable queries with a gold in the first 5 that may be emptied, per kind
DEPTH = 5
ANSWERABLE, RECORDED, REMOVED = "answerable", "nothing related, recorded", "nothing related, gold removed"
CASES = (ANSWERABLE, RECORDED, REMOVED)
C = 1.0  # the regression's regularisation: sklearn's default, not tuned
# The decision judges Searches with at least this percentile of its examples' candidate counts.
MIN_CANDIDATES_PERCENTILE = 1


@dataclass(frozen=True)
class Example:
    repo: str
    kind: str  # the query's kind (`train.KINDS`), for the figures
    cut: str  # whose cut applies (`absence.kind_of`)
    case: str  # one of CASES
    x: np.ndarray  # its reading
    rank: int | None = None  # an answerable query's gold's rank

    @property
    def at_risk(self) -> bool:
        """An answerable query whose gold ranks in the first 5: what the cost cap protects."""
        return self.case == ANSWERABLE and self.rank is not None and self.rank <= DEPTH


def gold_rank(y: np.ndarray, p: np.ndarray) -> int | None:
    """Where the best-graded related candidate ranks by `p` (1-based), or None."""
    if y.max() <= 0:
        return None
    order = np.argsort(-p, kind="stable")
    return int(np.nonzero(y[order] == y.max())[0][0]) + 1


def examples(every: Sequence[Query], probabilities: Sequence[np.ndarray], absent: Sequence[np.ndarray]) -> list[Example]:
    """Every training query's example, and its `Query.absent`'s: `probabilities` of `every`'s
    candidates, `absent` of each `Query.absent` in `every`'s order."""
    rows: list[Example] = []
    without = iter(absent)
    for q, p in zip(every, probabilities, strict=True):
        p_absent = next(without) if q.absent is not None else None
        if not q.trains:
            continue
        if q.related == 0:
            rows.append(_example(q, p, RECORDED))
        elif q.y.max() > 0:
            rows.append(_example(q, p, ANSWERABLE, gold_rank(q.y, p)))
            if q.absent is not None and p_absent is not None:
                rows.append(_example(q.absent, p_absent, REMOVED))
    if next(without, None) is not None:
        raise ValueError("more absent-condition probabilities than queries with an absent condition")
    return rows


def _example(q: Query, p: np.ndarray, case: str, rank: int | None = None) -> Example:
    return Example(q.repo, q.kind, kind_of(p, q.x), case, reading(p, q.bm25, q.cosine), rank)


def _fit(x: np.ndarray, y: np.ndarray) -> Absence:
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    scale = StandardScaler().fit(x)
    model = LogisticRegression(C=C, max_iter=5000).fit(scale.transform(x), y)
    return Absence(tuple(map(float, scale.mean_)), tuple(map(float, scale.scale_)), tuple(map(float, model.coef_[0])),
                   float(model.intercept_[0]), {})


def _matrix(rows: Sequence[Example]) -> tuple[np.ndarray, np.ndarray]:
    """The examples' readings, and whether each is answerable."""
    return np.vstack([r.x for r in rows]), np.asarray([r.case == ANSWERABLE for r in rows], dtype=int)


def out_of_fold(rows: Sequence[Example], folds: Sequence[set[str]]) -> np.ndarray:
    """Each example's P(answerable) from a regression fitted on the other folds' examples."""
    x, y = _matrix(rows)
    out = np.full(len(rows), np.nan)
    for fold in folds:
        held = np.asarray([r.repo in fold for r in rows])
        if held.any() and not held.all():
            out[held] = _fit(x[~held], y[~held]).answerable(x[held])
    return out


def cut_of(score: np.ndarray, rows: Sequence[Example]) -> float:
    """The highest cut at which at most `COST_CAP` of `rows`' answerable queries with a gold in
    the first 5 score below it (0 where none is at risk: nothing is emptied)."""
    at_risk = np.sort(np.asarray([s for s, r in zip(score, rows, strict=True) if r.at_risk]))
    return float(at_risk[int(np.floor(COST_CAP * len(at_risk)))]) if len(at_risk) else 0.0


def learn(every: Sequence[Query], probabilities: Sequence[np.ndarray], absent: Sequence[np.ndarray],
          folds: Sequence[set[str]]) -> tuple[Absence, dict[str, Any]]:
    """The decision over every example (`examples`), its cuts, and what it costs and saves out
    of fold (per query kind, beside the first candidate's P alone at the same cap)."""
    rows = examples(every, probabilities, absent)
    learned = out_of_fold(rows, folds)
    first = np.asarray([r.x[READINGS.index("p1")] for r in rows])
    cuts = {kind: _cut_within(learned, rows, kind) for kind in (COMMIT, EXPERIENCE)}
    first_cuts = {kind: _cut_within(first, rows, kind) for kind in (COMMIT, EXPERIENCE)}
    counts = np.round(np.expm1([r.x[READINGS.index("candidates")] for r in rows]))
    fewest = int(np.percentile(counts, MIN_CANDIDATES_PERCENTILE))
    decision = dataclasses.replace(_fit(*_matrix(rows)), cuts=cuts, min_candidates=fewest)
    judged = counts >= fewest
    figures = {
        "cost_cap": COST_CAP, "readings": list(READINGS),
        "examples": {case: sum(r.case == case for r in rows) for case in CASES},
        "note": "out of fold on the training data (not validation); each kind's cut is chosen on the same "
                "out-of-fold probabilities it is reported on, so the cost at the cut is in-sample by construction; "
                "'gold removed': each answerable query's Search recomputed without its related experiences",
        "min_candidates": fewest,
        "learned": report(learned, cuts, rows, judged),
        "first candidate's P alone": report(first, first_cuts, rows, judged),
    }
    return decision, figures


def _cut_within(score: np.ndarray, rows: Sequence[Example], cut: str) -> float:
    """The cut of the Searches whose first candidate is of kind `cut`: the lowest of the cuts
    that keep each query kind among them within the cap (a kind with no answerable query at
    risk among them sets none)."""
    mine = [i for i, r in enumerate(rows) if r.cut == cut]
    return min((cut_of(score[idx], [rows[i] for i in idx])
                for kind in sorted({rows[i].kind for i in mine if rows[i].at_risk})
                if (idx := [i for i in mine if rows[i].kind == kind])), default=0.0)


def report(score: np.ndarray, cuts: dict[str, float], rows: Sequence[Example], judged: np.ndarray | None = None
           ) -> dict[str, Any]:
    """Per query kind: the share of at-risk answerable queries emptied (the cost), of every
    answerable one, and of each nothing-related case answered empty (the saving); `judged`:
    the examples the decision judges (default: all)."""
    emptied = np.asarray([s < cuts[r.cut] for s, r in zip(score, rows, strict=True)])
    if judged is not None:
        emptied &= judged
    out: dict[str, Any] = {"cuts": {k: round(v, 4) for k, v in cuts.items()}}
    for kind in ("all", *sorted({r.kind for r in rows})):
        mine = [i for i, r in enumerate(rows) if kind == "all" or r.kind == kind]
        groups = {"cost: gold in the first 5 emptied": [i for i in mine if rows[i].at_risk],
                  "answerable emptied (gold anywhere)": [i for i in mine if rows[i].case == ANSWERABLE],
                  **{f"saving: {case} answered empty": [i for i in mine if rows[i].case == case]
                     for case in (RECORDED, REMOVED)}}
        out[kind] = {name: {"share": round(float(emptied[idx].mean()), 3) if idx else None, "of": len(idx)}
                     for name, idx in groups.items()}
    return out
