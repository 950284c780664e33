"""The shipped learned ranker loads, computes the features it was trained on, and puts a
candidate every signal points at above one that only a retriever's tail found."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from codemem.ranking.features import FEATURES, as_mapping, candidate_features, candidates
from codemem.ranking.learned import LearnedRanker, ModelMismatch, packaged
from codemem.ranking.recipes import DEFAULT_SEARCH
from codemem.ranking.relevance import SessionSignals
from codemem.ranking.types import Candidate


def _found(scores: dict[str, dict[str, float]], kind: str = "card") -> dict[str, list[Candidate]]:
    """Each retriever's best-first items, one per session."""
    return {name: [Candidate(id=f"{name}-{k}", score=s, fields={"session_key": k, "kind": kind})
                   for k, s in sorted(by_key.items(), key=lambda kv: -kv[1])]
            for name, by_key in scores.items()}


def _signals() -> SessionSignals:
    """`related` is first in BM25, dense, references and code locations, with clear leads;
    `unrelated` is far behind in each; the others are look-alikes in between."""
    fillers = {f"f{i}": i for i in range(1, 9)}
    lexical = {"related": 40.0, **{k: 14.0 - i for k, i in fillers.items()}, "unrelated": 3.0}
    dense = {"related": 0.82, **{k: 0.55 - 0.01 * i for k, i in fillers.items()}, "unrelated": 0.31}
    refs = {"related": 25.0, **{k: 6.0 - 0.5 * i for k, i in fillers.items()}}
    location = {"related": (9.0, 2.0), "f1": (1.0, 0.5), "f2": (0.0, 1.0)}
    return SessionSignals.of(_found({"lexical": lexical, "dense": dense, "refs": refs}), location)


def test_the_shipped_model_ranks_a_strong_related_candidate_above_an_unrelated_one() -> None:
    ranker = packaged()
    signals = _signals()
    scores = ranker.scores(signals, DEFAULT_SEARCH)
    order = sorted(scores, key=lambda k: -scores[k])
    assert order[0] == "related"
    assert scores["related"] > scores["unrelated"]
    assert order[-1] == "unrelated"  # below the look-alikes too
    # Calibrated: the clear winner is many times likelier related than the base rate (~7% of
    # the training candidates), the tail well under it.
    assert scores["related"] > 0.3 and scores["unrelated"] < 0.05


def test_features_follow_the_signals() -> None:
    signals = _signals()
    keys = candidates(signals, DEFAULT_SEARCH)
    assert keys[0] == "related" and set(keys) >= {"related", "unrelated", "f1"}
    by_key = candidate_features(signals, DEFAULT_SEARCH, keys)
    related, unrelated = as_mapping(by_key["related"]), as_mapping(by_key["unrelated"])
    assert len(by_key["related"]) == len(FEATURES)
    assert related["lexical_rr"] == related["dense_rr"] == related["refs_rr"] == related["location_rr"] == 1.0
    assert related["lexical_share"] == related["fused"] == 1.0 and related["firsts"] == 4
    assert unrelated["refs_rr"] == 0.0 and unrelated["location_edited"] == 0.0
    assert unrelated["dense_gap"] < 0 and unrelated["fused_lead"] < 0


def test_a_model_trained_on_other_features_is_refused(tmp_path: Path) -> None:
    shipped = Path(__file__).resolve().parents[2] / "codemem" / "ranking" / "models"
    for name in ("ranker.txt", "ranker.json"):
        shutil.copy(shipped / name, tmp_path / name)
    card = json.loads((tmp_path / "ranker.json").read_text())
    assert card["features"] == list(FEATURES)  # the shipped model is this code's
    card["features"] = card["features"][:-1] + ["something_else"]
    (tmp_path / "ranker.json").write_text(json.dumps(card))
    with pytest.raises(ModelMismatch, match="retrain"):
        LearnedRanker.load(tmp_path)


def test_a_search_can_opt_in_to_the_learned_ranking(memory) -> None:  # type: ignore[no-untyped-def]
    from codemem.models import AddRequest, SearchRequest
    from codemem.ranking.recipes import DEFAULT_SEARCH, LEARNED_SEARCH
    from train.ranker.build_data import session_messages

    patch = ("diff --git a/pkg/{f}.py b/pkg/{f}.py\n--- a/pkg/{f}.py\n+++ b/pkg/{f}.py\n"
             "@@ -1,2 +1,2 @@ def {g}():\n-    return {g}_old()\n+    return {g}_new()\n")
    tasks = [("t1", "Cache key collides for unicode paths in resolve_cache_key", "cache", "resolve_cache_key"),
             ("t2", "Colour bar ticks overlap when the axis is logarithmic", "colorbar", "tick_locator"),
             ("t3", "Timezone offset lost when serialising naive datetimes", "dates", "to_iso")]
    for sid, problem, f, g in tasks:
        task = {"problem_statement": problem, "files": [f"pkg/{f}.py"], "patch": patch.format(f=f, g=g)}
        memory.add(AddRequest(request_id=f"{sid}:0", user_id="u", session_id=sid, messages=session_messages(task)))
    query = SearchRequest(user_id="u", query="resolve_cache_key returns the same key for two unicode paths", top_k=3)
    assert DEFAULT_SEARCH.ranking == "fused"  # opt-in only
    hits = memory.search(query, config=LEARNED_SEARCH)
    assert hits and hits[0].session_id == "t1"
    # Its metadata gives the model's calibrated P(related) and the features that carried it.
    first = hits[0].metadata
    assert 0.0 < float(first["relevance"]) <= 1.0
    assert set(first["features"]) <= set(FEATURES) and len(first["features"]) == 3
    with pytest.raises(ValueError, match="fused, learned"):
        DEFAULT_SEARCH.replace(ranking="best")
