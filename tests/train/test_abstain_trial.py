"""The nothing-related trial's parts: which queries it reads as what, and a cut that empties at
most 1% of the answerable queries whose gold ranks in the first 5."""

from __future__ import annotations

import numpy as np

from train.ranker.abstain_trial import (
    ANSWERABLE,
    RECORDED,
    REMOVED,
    Example,
    examples,
    gold_rank,
    threshold,
)
from train.ranker.train import Query


def _query(y: list[int], related: int, repo: str = "r") -> Query:
    n = len(y)
    return Query("q", repo, "session", "mini", [f"k{i}" for i in range(n)], np.zeros((n, 1)), np.asarray(y),
                 np.zeros(n), np.linspace(1, 0, n), np.linspace(0.9, 0.1, n), related)


def test_each_answerable_query_is_also_read_without_its_related_candidates() -> None:
    p_answerable, p_empty = np.asarray([0.2, 0.9, 0.1]), np.asarray([0.3, 0.2])
    rows = examples([_query([0, 2, 0], related=1), _query([0, 0], related=0)], [p_answerable, p_empty])
    assert [r.case for r in rows] == [ANSWERABLE, REMOVED, RECORDED]
    assert rows[0].rank == 1 and rows[0].x[0] == 0.9
    assert rows[1].x[0] == 0.2  # the best candidate left once the gold is gone
    assert gold_rank(_query([0, 0, 1], related=1), np.asarray([0.5, 0.4, 0.3])) == 3


def test_the_cut_empties_at_most_one_in_a_hundred_golds_in_the_first_five() -> None:
    rows = [Example("r", "session", ANSWERABLE, [0.0], rank=1) for _ in range(300)]
    rows += [Example("r", "session", ANSWERABLE, [0.0], rank=9)]  # not at risk: gold below the first 5
    rows += [Example("r", "session", RECORDED, [0.0])]
    score = np.concatenate([np.linspace(0.01, 1.0, 300), [0.0, 0.0]])
    cut = threshold(score, rows)
    at_risk = score[:300]
    assert (at_risk < cut).sum() == 3  # 1% of 300
