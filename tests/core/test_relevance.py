"""The calibration's signals: how far an experience stands out from the best other, on
any score's scale, so that a clear winner reads as more relevant than the best of many
look-alikes whatever the repository's scores look like."""

from __future__ import annotations

import pytest

from codemem.ranking.recipes import DEFAULT_SEARCH
from codemem.ranking.relevance import (
    SessionSignals,
    features,
    fuse,
    relevance,
    runner_up,
    share_lead,
)
from codemem.ranking.types import Candidate


def _found(lexical: dict[str, float], dense: dict[str, float]) -> dict[str, list[Candidate]]:
    def best_first(scores: dict[str, float]) -> list[Candidate]:
        return [Candidate(id=f"{k}-item", score=s, fields={"session_key": k})
                for k, s in sorted(scores.items(), key=lambda kv: -kv[1])]

    return {"lexical": best_first(lexical), "dense": best_first(dense), "refs": []}


def _features(signals: SessionSignals, key: str) -> tuple[float, float, float, float]:
    scores = fuse(signals, DEFAULT_SEARCH)
    return features(signals, key, scores[key], runner_up(scores)[key])


def test_a_lead_is_a_share_of_the_larger_score_whatever_the_scale() -> None:
    assert share_lead(2.0, 1.0) == share_lead(200.0, 100.0) == 0.5
    assert share_lead(1.0, 2.0) == -0.5  # the one behind
    assert share_lead(3.0, 3.0) == 0.0
    assert share_lead(3.0, 0.0) == 1.0  # nothing else scores
    assert share_lead(0.0, 0.0) == 0.0


def test_signals_keep_each_sessions_best_bm25_and_cosine() -> None:
    found = _found({"a": 9.0, "b": 4.0}, {"b": 0.7, "a": 0.5})
    found["lexical"].append(Candidate(id="a-weaker", score=1.0, fields={"session_key": "a"}))
    signals = SessionSignals.of(found, {})
    assert signals.bm25 == {"a": 9.0, "b": 4.0}
    assert signals.cosine == {"b": 0.7, "a": 0.5}


def test_features_read_the_leads_the_cosine_and_the_retrievers_that_agree() -> None:
    signals = SessionSignals.of(_found({"a": 12.0, "b": 4.0, "c": 3.0}, {"a": 0.8, "b": 0.6, "c": 0.5}), {})
    fused_lead, bm25_lead, cosine, agree = _features(signals, "a")
    assert fused_lead > 0 and bm25_lead == pytest.approx(1 - 4.0 / 12.0) and cosine == 0.8 and agree == 2
    fused_lead, bm25_lead, cosine, agree = _features(signals, "b")
    assert fused_lead < 0 and bm25_lead == pytest.approx(4.0 / 12.0 - 1) and cosine == 0.6 and agree == 0


def test_the_bm25_lead_does_not_depend_on_the_repositorys_score_scale() -> None:
    low = SessionSignals.of(_found({"a": 6.0, "b": 2.0}, {"a": 0.6, "b": 0.4}), {})
    high = SessionSignals.of(_found({"a": 60.0, "b": 20.0}, {"a": 0.6, "b": 0.4}), {})
    assert _features(low, "a") == _features(high, "a")


def test_a_clear_winner_is_more_relevant_than_the_best_of_look_alikes() -> None:
    # The same best experience, first in both retrievers with the same cosine; only how far
    # it stands out differs.
    clear = SessionSignals.of(_found({"a": 30.0, "b": 5.0, "c": 4.0}, {"a": 0.6, "b": 0.3, "c": 0.2}), {})
    crowd = SessionSignals.of(_found({"a": 30.0, "b": 29.0, "c": 28.0}, {"a": 0.6, "c": 0.59, "b": 0.58}), {})

    def best(signals: SessionSignals) -> float:
        scores = fuse(signals, DEFAULT_SEARCH)
        return relevance(signals, "a", scores["a"], runner_up(scores)["a"], DEFAULT_SEARCH)

    assert best(clear) > best(crowd)
