"""The hand-set fusion kept as a baseline (`eval/replay/fusion.py`): its calibration reads how
far an experience stands out from the best other, on any score's scale, so that a clear winner
reads as more relevant than the best of many look-alikes; its commit rankings count only where
a memory holds commits."""

from __future__ import annotations

import pytest

from codemem.ranking.relevance import SessionSignals
from codemem.ranking.types import Candidate
from eval.replay.fusion import FUSED, FusedRanker, fuse, relevance
from eval.replay.fusion import location_ranks as fused_location_ranks


def _found(lexical: dict[str, float], dense: dict[str, float]) -> dict[str, list[Candidate]]:
    def best_first(scores: dict[str, float]) -> list[Candidate]:
        return [Candidate(id=f"{k}-item", score=s, fields={"session_key": k})
                for k, s in sorted(scores.items(), key=lambda kv: -kv[1])]

    return {"lexical": best_first(lexical), "dense": best_first(dense), "refs": []}


def _relevance(signals: SessionSignals, key: str) -> float:
    return FusedRanker().rank(signals).relevance[key]


def test_the_bm25_lead_does_not_depend_on_the_repositorys_score_scale() -> None:
    low = SessionSignals.of(_found({"a": 6.0, "b": 2.0}, {"a": 0.6, "b": 0.4}), {})
    high = SessionSignals.of(_found({"a": 60.0, "b": 20.0}, {"a": 0.6, "b": 0.4}), {})
    assert _relevance(low, "a") == _relevance(high, "a")


def test_a_clear_winner_is_more_relevant_than_the_best_of_look_alikes() -> None:
    # The same best experience, first in both retrievers with the same cosine; only how far
    # it stands out differs.
    clear = SessionSignals.of(_found({"a": 30.0, "b": 5.0, "c": 4.0}, {"a": 0.6, "b": 0.3, "c": 0.2}), {})
    crowd = SessionSignals.of(_found({"a": 30.0, "b": 29.0, "c": 28.0}, {"a": 0.6, "c": 0.59, "b": 0.58}), {})
    assert _relevance(clear, "a") > _relevance(crowd, "a")
    assert relevance(clear, "a", 1.0, 0.0) > relevance(clear, "a", 1.0, 1.0)  # a fused lead counts too


def test_commit_rankings_change_nothing_where_they_are_absent() -> None:
    found = {"lexical": [Candidate(id="a", score=2.0, fields={"session_key": "a"}),
                         Candidate(id="b", score=1.0, fields={"session_key": "b"})],
             "dense": [Candidate(id="b", score=0.9, fields={"session_key": "b"})]}
    plain = fuse(SessionSignals.of(found, {}))
    assert fuse(SessionSignals.of(found, {}, {"title": {}, "subject": {}})) == plain
    boosted = fuse(SessionSignals.of(found, {}, {"subject": {"a": 1}}))
    assert boosted["a"] > boosted["b"] and plain["b"] > plain["a"]


def test_a_mentioned_key_counts_a_share_of_an_edited_one() -> None:
    signals = SessionSignals({}, {}, location={"edits": (1.0, 0.0), "mentions": (0.0, 3.0), "weak": (0.0, 1.0)})
    assert FUSED.location_mention_weight == pytest.approx(0.25)
    assert fused_location_ranks(signals) == {"edits": 1, "weak": 3, "mentions": 2}


def test_the_fusion_ranks_a_memorys_searches_in_place_of_the_model(tmp_path, embedder) -> None:  # type: ignore[no-untyped-def]
    """What `python -m eval.replay` runs as its `fused` system: the same Search, the fusion's
    order, floor and quiet threshold."""
    from codemem.config import Settings
    from codemem.contract.types import AddRequest, Message, SearchRequest
    from codemem.memory import Memory
    from eval.replay.fusion import fused_search

    settings = Settings().replace({"storage.data_dir": str(tmp_path), "maintenance.interval_s": 0})
    with Memory(settings, embedder=embedder, ranker=FusedRanker()) as memory:
        memory.add(AddRequest("fix", "dev", "fix", [Message("user", "bulk_create crashes with ignore_conflicts"),
                                                     Message("assistant", "Fixed django/db/models/query.py")]))
        memory.add(AddRequest("css", "dev", "css", [Message("user", "Recolour the login button in admin/css/login.css")]))
        config = fused_search(memory.search_config)
        hits = memory.search(SearchRequest(user_id="dev", query="bulk_create TypeError with ignore_conflicts", top_k=5),
                             config)
    assert hits[0].session_id == "fix" and "features" not in hits[0].metadata  # no model: nothing carried it
    assert config.calibration.quiet_below == FUSED.quiet_below
    assert 0 < hits[0].metadata["relevance"] < 1 and 0 < hits[0].score <= 1  # ordered by the fused score
