"""The choices eval.replay.relevance_cv makes from its training tasks: a floor with a margin under
the training gold, a calibration whose penalty does not depend on a feature's unit, and a
quiet threshold read on a smoothed curve rather than at one lucky point."""

from __future__ import annotations

import numpy as np
import pytest

from codemem.ranking.recipes import DEFAULT_SEARCH
from codemem.ranking.relevance import SessionSignals
from codemem.store.schema import key_of
from eval.replay import relevance_cv
from eval.replay.data import Task


def _rows(n: int = 400, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2))
    y = (rng.random(n) < 1 / (1 + np.exp(-(2 * x[:, 0] - 1)))).astype(float)
    return x, y


def test_the_calibration_learns_the_informative_feature() -> None:
    x, y = _rows()
    b0, b1, b2 = relevance_cv.fit_logistic(x, y, l2=1.0)
    assert b1 > 1.0 and abs(b2) < 0.5 and b0 < 0


def test_the_penalty_does_not_depend_on_a_features_unit() -> None:
    x, y = _rows()
    plain = relevance_cv.fit_logistic(x, y, l2=10.0)
    scaled = relevance_cv.fit_logistic(x * np.array([10.0, 1.0]), y, l2=10.0)
    assert scaled[1] * 10 == pytest.approx(plain[1], abs=2e-3)  # coefficients are rounded to 4 places
    assert scaled[0] == pytest.approx(plain[0], abs=1e-3) and scaled[2] == pytest.approx(plain[2], abs=1e-3)


def test_the_calibration_chooses_one_of_its_penalties_by_held_out_tasks() -> None:
    x, y = _rows()
    coefficients, l2 = relevance_cv.fit_calibration(x, y, np.arange(len(x)) // 10)
    assert l2 in relevance_cv.PENALTIES and len(coefficients) == 3 and coefficients[1] > 0


def test_the_threshold_ignores_a_lone_lucky_point_of_the_curve() -> None:
    ts = [round(0.02 * i, 2) for i in range(1, 30)]
    curve = {t: (0.5, 0.6) for t in ts}
    curve[0.1] = (0.5, 0.2)  # one threshold that happened to suit the training tasks
    for t in ts[18:25]:
        curve[t] = (0.45, 0.4)  # a broad region that is better on the whole
    chosen = relevance_cv.choose_threshold(curve)
    assert 0.38 <= chosen <= 0.5
    broad = {t: (0.6 if t < 0.3 else 0.5, 0.25) for t in ts}
    assert relevance_cv.choose_threshold(broad) < 0.3  # the best gold share within the target


def _case(task: str, gold_lexical_rank: int) -> relevance_cv.Case:
    """A case whose gold session `g` is ranked `gold_lexical_rank` by BM25 alone."""
    keys = [f"x{i}" for i in range(1, 12)]
    keys.insert(gold_lexical_rank - 1, "g")
    signals = SessionSignals({"lexical": {key_of("all", k): i for i, k in enumerate(keys, 1)}}, {})
    return relevance_cv.Case(Task(task, "r/r", "q", frozenset({"g"})), "noisy-all", signals)


def test_the_floor_keeps_a_margin_under_the_training_gold() -> None:
    config = DEFAULT_SEARCH.replace({"fusion.dense_weight": 0.0, "fusion.refs_weight": 0.0,
                                     "fusion.location_weight": 0.0, "fusion.session_rrf_k": 1})
    cases = [_case("t1", 2), _case("t2", 3)]  # gold at 2/3 and 1/2 of the best score
    gold = {c.task.instance_id: {key_of("all", "g")} for c in cases}
    # Every floor up to 0.5 keeps both golds; the one chosen is half of that.
    assert relevance_cv.fit_floor(cases, config, gold, room=10) == pytest.approx(0.25)
