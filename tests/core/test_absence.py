"""The nothing-related decision as a Search applies it: what it reads of the candidates, whose
cut applies, and that a card without it, or with other readings, is handled."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from codemem.config import Settings
from codemem.contract.types import AddRequest, Message, SearchRequest
from codemem.encoders import ShippedEmbedder
from codemem.memory import Memory
from codemem.ranking.absence import COMMIT, EXPERIENCE, READINGS, Absence, kind_of, reading
from codemem.ranking.features import FEATURES
from codemem.ranking.learned import MODELS, LearnedRanker, ModelMismatch
from codemem.ranking.recipes import DEFAULT_SEARCH
from codemem.ranking.search_config import SearchConfig
from tests import coding_memory


def _x(n: int, commit: bool = False, **values: float) -> np.ndarray:
    x = np.zeros((n, len(FEATURES)))
    x[:, FEATURES.index("commit")] = float(commit)
    for name, v in values.items():
        x[:, FEATURES.index(name)] = v
    return x


def _on_p1(cut_commit: float = 0.5, cut_experience: float = 0.5) -> Absence:
    """A decision that reads the first candidate's P alone: P(answerable) 0.5 at p1 = 0.5."""
    n = len(READINGS)
    coef = tuple(8.0 if name == "p1" else 0.0 for name in READINGS)
    return Absence((0.5,) + (0.0,) * (n - 1), (1.0,) * n, coef, 0.0, {COMMIT: cut_commit, EXPERIENCE: cut_experience})


def test_the_reading_takes_the_most_probable_candidates_in_order_whatever_the_candidate_order() -> None:
    p = np.asarray([0.1, 0.7, 0.3])
    r = dict(zip(READINGS, reading(p, np.asarray([2.0, 9.0, 1.0]), np.asarray([0.2, 0.5, 0.6])), strict=True))
    assert (r["p1"], r["p2"], r["p3"]) == (0.7, 0.3, 0.1)
    assert r["gap12"] == pytest.approx(0.4) and r["related5"] == 1.0 and r["mean5"] == pytest.approx(1.1 / 5)
    assert r["best_bm25"] == 9.0 and r["best_cosine"] == 0.6
    assert r["candidates"] == pytest.approx(np.log1p(3))
    assert reading(np.asarray([0.4]), np.asarray([-1.0]), np.asarray([0.3]))[1] == 0.0  # fewer than five: zeros


def test_each_kind_answers_empty_below_its_own_cut() -> None:
    decision = _on_p1(cut_commit=0.9, cut_experience=0.1)
    weak = np.asarray([0.45, 0.1])  # P(answerable) ~0.4
    bm25, cosine = np.asarray([1.0, 0.5]), np.asarray([0.3, 0.2])
    assert kind_of(weak, _x(2, commit=True)) == COMMIT and kind_of(weak, _x(2)) == EXPERIENCE
    assert decision.nothing_related(weak, _x(2, commit=True), bm25, cosine)
    assert not decision.nothing_related(weak, _x(2), bm25, cosine)
    assert not decision.nothing_related(np.asarray([0.95, 0.1]), _x(2, commit=True), bm25, cosine)


def test_the_packaged_card_loads_with_or_without_a_decision_and_refuses_other_readings(tmp_path: Path) -> None:
    model = tmp_path / "model"
    shutil.copytree(MODELS, model)
    card = json.loads((model / "ranker.json").read_text())
    card["search"].pop("nothing_related", None)
    (model / "ranker.json").write_text(json.dumps(card))
    assert LearnedRanker.load(model).absence is None  # an older card: never empty

    card["search"]["nothing_related"] = _on_p1().card()
    (model / "ranker.json").write_text(json.dumps(card))
    assert LearnedRanker.load(model).absence == _on_p1()

    card["search"]["nothing_related"]["readings"] = ["p1"]
    (model / "ranker.json").write_text(json.dumps(card))
    with pytest.raises(ModelMismatch, match="readings"):
        LearnedRanker.load(model)


def test_a_search_the_decision_reads_as_unrelated_is_empty_unless_the_search_asks_for_rank_alone(
        settings: Settings, embedder: ShippedEmbedder) -> None:
    packaged = LearnedRanker.load()
    # Cuts that put the nothing-related line between an exact question and an invented one.
    memory = Memory(settings, embedder=embedder, ranker=dataclasses.replace(packaged, absence=_on_p1(0.5, 0.5)))
    try:
        memory.add(AddRequest("fix", "dev", "fix", [
            Message("user", "QuerySet.bulk_create() crashes with a TypeError when ignore_conflicts=True"),
            Message("assistant", "Fixed _batched_insert in django/db/models/query.py; tests/bulk_create pass")]))
        memory.add(AddRequest("chore", "dev", "chore", [Message("user", "Bump the copyright year in docs/conf.py")]))

        def search(query: str, config: SearchConfig = DEFAULT_SEARCH) -> list[str]:
            return [h.session_id for h in memory.search(SearchRequest(user_id="dev", query=query, top_k=5), config)]

        related = "bulk_create TypeError with ignore_conflicts in _batched_insert (django/db/models/query.py)"
        invented = "Plombrix quervane stollicut yarbenthal"
        assert search(related)[0] == "fix"
        assert search(invented) == []
        assert search(invented, DEFAULT_SEARCH.replace({"calibration.empty_when_unrelated": False}))  # the nearest, quiet
    finally:
        memory.close()


def test_a_search_outside_what_the_decision_learned_from_is_never_emptied() -> None:
    decision = dataclasses.replace(_on_p1(0.99, 0.99), min_candidates=7)  # empties everything it judges
    p, x = np.full(7, 0.1), _x(7)
    bm25, cosine = np.full(7, 1.0), np.full(7, 0.2)
    assert decision.nothing_related(p, x, bm25, cosine)
    assert not decision.nothing_related(p[:6], x[:6], bm25[:6], cosine[:6])  # fewer candidates than it learned from
    assert not decision.nothing_related(p, x, bm25, np.full(7, -2.0))  # no vector found: no dense signal to read


def test_a_search_for_an_exact_identifier_the_memory_holds_is_never_emptied(
        settings: Settings, embedder: ShippedEmbedder) -> None:
    always = dataclasses.replace(LearnedRanker.load(), absence=_on_p1(0.99, 0.99))  # reads every Search as unrelated
    with Memory(settings, embedder=embedder, ranker=always) as memory:
        coding_memory.fill(memory)
        memory.add(AddRequest("tag", "dev", "tagged", [Message("user", "Deploy step failed"),
                                                       Message("assistant", "The runner printed ERR_QZ4417 and stopped")]))

        def search(query: str) -> list[str]:
            return [h.session_id for h in memory.search(SearchRequest(user_id="dev", query=query, top_k=5))]

        assert search("ERR_QZ4417")[0] == "tagged"  # named whole and held: not "nothing related"
        assert search("where did the deploy runner print ERR_QZ4417 and stop") == []  # a question, judged
        assert search(coding_memory.INVENTED) == []
        assert search("ERR_ZZ9999") == []  # an identifier the memory does not hold
