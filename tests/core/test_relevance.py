"""The signals a Search hands the relevance model: each session's best BM25 and cosine, and how
far a score stands out from the best other on any score's scale."""

from __future__ import annotations

from codemem.ranking.relevance import SessionSignals, share_lead
from codemem.ranking.types import Candidate


def _found(lexical: dict[str, float], dense: dict[str, float]) -> dict[str, list[Candidate]]:
    def best_first(scores: dict[str, float]) -> list[Candidate]:
        return [Candidate(id=f"{k}-item", score=s, fields={"session_key": k})
                for k, s in sorted(scores.items(), key=lambda kv: -kv[1])]

    return {"lexical": best_first(lexical), "dense": best_first(dense), "refs": []}


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


def test_signals_keep_the_references_bm25_and_each_item_kinds_best() -> None:
    found = _found({"a": 9.0}, {"a": 0.5})
    found["lexical"].append(Candidate(id="a-step", score=3.0, fields={"session_key": "a", "kind": "step"}))
    found["refs"] = [Candidate(id="b-refs", score=7.0, fields={"session_key": "b"})]
    signals = SessionSignals.of(found, {}, {"title": {"a": 1}, "subject": {}})
    assert signals.refs_bm25 == {"b": 7.0} and signals.kind_bm25["step"] == {"a": 3.0}
    assert signals.commit_ranks == {"title": {"a": 1}} and signals.commits == frozenset()
