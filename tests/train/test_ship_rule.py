"""The ship rule (`train.ranker.ship_rule`, written in train/ranker/README.md): a candidate that
loses ranking to the reference, or that a single feature does as well as, or whose added features
do not gain what they are for, fails; one equal to the reference passes; the highest MRR among
those that pass ships."""

from __future__ import annotations

import numpy as np

from train.ranker import ship_rule


def _queries(n: int, seed: int = 0) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """`n` queries of 10 candidates, one related (label 2) at a random place; a feature matrix
    whose column 0 is a noisy sign of it and column 1 noise."""
    rng = np.random.default_rng(seed)
    labels, xs = [], []
    for _ in range(n):
        y = np.zeros(10, dtype=int)
        y[rng.integers(10)] = 2
        labels.append(y)
        xs.append(np.column_stack([y + rng.normal(0, 1.5, 10), rng.normal(0, 1, 10)]))
    return labels, xs


def _scores(labels: list[np.ndarray], hits: np.ndarray) -> list[np.ndarray]:
    """Scores that put the related candidate first where `hits` is true, last elsewhere."""
    return [np.where(y > 0, 1.0 if h else -1.0, 0.0) for y, h in zip(labels, hits, strict=True)]


def test_per_query_figures_follow_the_first_gold() -> None:
    y = np.asarray([0, 1, 2, 0, 2])
    each = ship_rule.per_query([y, y, np.zeros(3, dtype=int)], [np.asarray([5, 4, 3, 2, 1.0]),
                                                                  np.asarray([0, 0, 0, 0, 1.0]), np.zeros(3)])
    assert each["hit@1"].tolist() == [0.0, 1.0, 0.0]
    assert each["mrr"].tolist() == [1 / 3, 1.0, 0.0]
    assert each["useful@1"].tolist() == [0.0, 1.0, 0.0]
    assert each["hit@5"].tolist() == [1.0, 1.0, 0.0]


def test_the_best_single_feature_is_chosen_without_its_held_out_fold() -> None:
    labels, xs = _queries(200)
    folds = [list(range(i, 200, 4)) for i in range(4)]
    scores, chosen = ship_rule.single_feature_scores(xs, labels, folds)
    assert chosen == [0, 0, 0, 0]  # the informative column, chosen on the other folds each time
    assert all(np.array_equal(s, x[:, 0]) for s, x in zip(scores, xs, strict=True))
    # A fold whose queries are alone in preferring column 1 still gets the column the others chose.
    flipped = [x[:, ::-1] if i in folds[0] else x for i, x in enumerate(xs)]
    _, chosen = ship_rule.single_feature_scores(flipped, labels, folds)
    assert chosen[0] == 0


def test_equal_passes_worse_fails_and_the_best_passing_ships() -> None:
    labels, xs = _queries(400, seed=1)
    kinds = ["session"] * 200 + ["commit"] * 150 + ["project"] * 50
    rng = np.random.default_rng(2)
    base = rng.random(400) < 0.6
    better = base | (rng.random(400) < 0.3)
    worse_in_commits = base.copy()
    worse_in_commits[200:350] &= rng.random(150) < 0.85  # about 0.09 fewer hits in one kind of 150
    alone = [x[:, 1] for x in xs]  # a weak single feature
    candidates = {"reference": _scores(labels, base), "same": _scores(labels, base), "better": _scores(labels, better),
                  "worse": _scores(labels, worse_in_commits)}
    report = ship_rule.decide(labels, kinds, candidates, dict.fromkeys(candidates, alone), {}, {}, "reference")
    verdict = {n: c["passes"] for n, c in report["candidates"].items()}
    assert verdict == {"reference": True, "same": True, "better": True, "worse": False}
    assert report["candidates"]["worse"]["checks"]["hit1_by_kind"] == {"session": True, "commit": False}
    assert "project" not in report["candidates"]["worse"]["checks"]["hit1_by_kind"]  # under 100 queries
    assert report["shipped"] == "better"
    lo, hi = report["candidates"]["better"]["minus_reference"]["all"]["hit@1"][1:]
    assert 0 < lo < hi


def test_a_candidate_no_better_than_one_feature_fails() -> None:
    labels, xs = _queries(300, seed=3)
    strong = [x[:, 0] for x in xs]
    report = ship_rule.decide(labels, ["session"] * 300, {"reference": strong}, {"reference": strong}, {}, {}, "reference")
    assert report["candidates"]["reference"]["checks"]["beats_best_single_feature"] is False
    assert report["shipped"] is None


def test_added_features_must_gain_what_they_are_for() -> None:
    labels, _ = _queries(400, seed=4)
    kinds = ["session"] * 300 + ["project"] * 100
    updates = list(range(300, 400))
    rng = np.random.default_rng(5)
    base = rng.random(400) < 0.5
    helps = base.copy()
    helps[300:] |= rng.random(100) < 0.5  # newest first gains on the update questions
    noise = [np.zeros(10) for _ in labels]
    candidates = {"reference": _scores(labels, base), "time": _scores(labels, helps), "idle": _scores(labels, base)}
    report = ship_rule.decide(labels, kinds, candidates, dict.fromkeys(candidates, noise),
                              {"project questions: update": updates},
                              {"time": ("project questions: update", "hit@1"),
                               "idle": ("project questions: update", "hit@1")}, "reference")
    time, idle = report["candidates"]["time"], report["candidates"]["idle"]
    assert time["checks"]["purpose_gain_above_0"] and time["purpose"]["gain"][1] > 0 and time["passes"]
    assert not idle["checks"]["purpose_gain_above_0"] and not idle["passes"]
    assert report["shipped"] == "time"
