"""The nothing-related decision's training: which queries it reads as what, a cut per kind that
empties at most 1% of the answerable queries whose gold ranks in the first 5, and a decision
that learns to tell a weak answer from a strong one out of fold."""

from __future__ import annotations

import numpy as np

from codemem.ranking.absence import COMMIT, EXPERIENCE, READINGS
from codemem.ranking.features import CANDIDATE_DEPTH, FEATURES, candidates
from codemem.ranking.relevance import SessionSignals
from train.ranker.absence import (
    ANSWERABLE,
    RECORDED,
    REMOVED,
    Example,
    _cut_within,
    cut_of,
    examples,
    gold_rank,
    learn,
)
from train.ranker.train import Query, without


def _query(y: list[int], related: int, repo: str = "r", commit: bool = False, kind: str = "session") -> Query:
    n = len(y)
    x = np.zeros((n, len(FEATURES)))
    x[:, FEATURES.index("commit")] = float(commit)
    return Query("q", repo, kind, "mini", [f"k{i}" for i in range(n)], x, np.asarray(y), np.zeros(n),
                 np.linspace(1, 0, n), np.linspace(0.9, 0.1, n), related)


def _answerable(y: list[int], **kw: object) -> Query:
    q = _query(y, related=1, **kw)  # type: ignore[arg-type]
    q.absent = _query([0] * (len(y) - 1), related=0, **kw)  # type: ignore[arg-type]
    q.absent.trains = False
    return q


def test_each_answerable_query_is_also_read_as_its_search_without_its_related_experiences() -> None:
    p_answerable, p_empty, p_without = np.asarray([0.2, 0.9, 0.1]), np.asarray([0.3, 0.2]), np.asarray([0.35, 0.1])
    rows = examples([_answerable([0, 2, 0]), _query([0, 0], related=0)], [p_answerable, p_empty], [p_without])
    assert [r.case for r in rows] == [ANSWERABLE, REMOVED, RECORDED]
    p1 = READINGS.index("p1")
    assert rows[0].rank == 1 and rows[0].x[p1] == 0.9
    assert rows[1].x[p1] == 0.35  # the Search without the gold, scored again
    assert gold_rank(np.asarray([0, 0, 1]), np.asarray([0.5, 0.4, 0.3])) == 3


def test_the_cut_empties_at_most_one_in_a_hundred_golds_in_the_first_five() -> None:
    rows = [Example("r", "session", EXPERIENCE, ANSWERABLE, np.zeros(1), rank=1) for _ in range(300)]
    rows += [Example("r", "session", EXPERIENCE, ANSWERABLE, np.zeros(1), rank=9)]  # gold below the first 5
    rows += [Example("r", "session", EXPERIENCE, RECORDED, np.zeros(1))]
    score = np.concatenate([np.linspace(0.01, 1.0, 300), [0.0, 0.0]])
    assert (score[:300] < cut_of(score, rows)).sum() == 3  # 1% of 300
    assert cut_of(score[300:], rows[300:]) == 0.0  # none at risk: nothing emptied


def test_a_decision_learned_out_of_fold_empties_weak_answers_and_keeps_strong_ones_per_kind() -> None:
    rng = np.random.default_rng(0)
    queries, probabilities, absent = [], [], []
    for i in range(400):
        commit = i % 2 == 0
        kind = "commit" if commit else "session"
        repo = f"r{i % 8}"
        if i % 4 < 2:  # answerable: a clear first candidate, the gold
            queries.append(_answerable([2, 0, 0, 0], repo=repo, commit=commit, kind=kind))
            probabilities.append(np.asarray([rng.uniform(0.6, 0.95), *rng.uniform(0.0, 0.2, 3)]))
            absent.append(rng.uniform(0.0, 0.3, 3))
        else:  # nothing related in memory
            queries.append(_query([0, 0, 0, 0], related=0, repo=repo, commit=commit, kind=kind))
            probabilities.append(rng.uniform(0.0, 0.3, 4))
    decision, figures = learn(queries, probabilities, absent, [{f"r{k}"} for k in range(8)])
    assert set(decision.cuts) == {COMMIT, EXPERIENCE}
    learned = figures["learned"]
    assert learned["all"]["cost: gold in the first 5 emptied"]["share"] <= 0.01
    for kind in ("commit", "session"):
        assert learned[kind]["saving: nothing related, recorded answered empty"]["share"] > 0.9
        assert learned[kind]["saving: nothing related, gold removed answered empty"]["share"] > 0.9
    # The shipped decision, refitted on every example, answers as the folds did.
    weak, strong = queries[2], queries[0]
    assert decision.nothing_related(probabilities[2], weak.x, weak.bm25, weak.cosine)
    assert not decision.nothing_related(probabilities[0], strong.x, strong.bm25, strong.cosine)


def test_a_search_without_the_related_experiences_moves_the_others_up_and_reads_a_deeper_one() -> None:
    depth = CANDIDATE_DEPTH
    order = ["gold", *(f"s{i}" for i in range(depth))]  # s29 lies one past the depth
    signals = SessionSignals({"lexical": {k: n for n, k in enumerate(order, 1)}, "dense": {"s0": 1, "gold": 2}},
                             {"gold": 0.9, "s0": 0.4}, {k: 10.0 - n / 10 for n, k in enumerate(order)},
                             {"gold": (2.0, 0.0)}, commits=frozenset({"gold"}))
    assert "gold" in candidates(signals) and f"s{depth - 1}" not in candidates(signals)
    after = without(signals, frozenset({"gold"}))
    assert after.ranks["lexical"]["s0"] == 1 and after.ranks["dense"] == {"s0": 1}
    assert f"s{depth - 1}" in candidates(after) and "gold" not in candidates(after)
    assert "gold" not in after.cosine and "gold" not in after.bm25 and not after.location and not after.commits


def test_no_query_kind_under_one_cut_pays_more_than_the_cap() -> None:
    # Sessions' golds score lower than projects': one cut over both would empty sessions' first.
    rows = [Example("r", "session", EXPERIENCE, ANSWERABLE, np.zeros(1), rank=1) for _ in range(100)]
    rows += [Example("r", "project", EXPERIENCE, ANSWERABLE, np.zeros(1), rank=1) for _ in range(900)]
    score = np.concatenate([np.linspace(0.01, 0.5, 100), np.linspace(0.5, 1.0, 900)])
    pooled = cut_of(score, rows)
    assert (score[:100] < pooled).sum() > 1  # pooled: sessions pay more than 1 in 100
    cut = _cut_within(score, rows, EXPERIENCE)
    assert (score[:100] < cut).sum() <= 1 and (score[100:] < cut).sum() <= 9
    # A kind with nothing at risk under this cut (commits that never come first here) sets no cut.
    rows += [Example("r", "commit", EXPERIENCE, RECORDED, np.zeros(1))]
    assert _cut_within(np.append(score, 0.3), rows, EXPERIENCE) == cut
