"""The shipped relevance model loads, computes the features it was trained on, was chosen by the
ship rule out of fold, puts a candidate every signal points at
above one that only a retriever's tail found, and ranks commit memories too."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from codemem.ranking.features import FEATURES, as_mapping, candidate_features, candidates
from codemem.ranking.learned import LearnedRanker, ModelMismatch, model_card, packaged
from codemem.ranking.recipes import DEFAULT_SEARCH
from codemem.ranking.relevance import SessionSignals
from codemem.ranking.types import Candidate
from train.ranker import absence, ship_rule


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
    signals.fields = {"related": (1.0, 0.9, 0.8, 0.0, 0.7, 0.0, 0.9), "f1": (0.2, 0.3, 0.1, 0.0, 0.2, 0.0, 0.3)}
    scores = ranker.rank(signals).scores
    order = sorted(scores, key=lambda k: -scores[k])
    assert order[0] == "related"
    assert scores["related"] > scores["unrelated"]
    assert order[-1] == "unrelated"  # below the look-alikes too
    # Calibrated: the clear winner clears the model's own quiet threshold, many times the base
    # rate (~2% of the training candidates); the tail is well under that rate.
    assert scores["related"] >= DEFAULT_SEARCH.calibration.quiet_below > scores["unrelated"]


def test_the_shipped_model_passed_the_ship_rule_and_had_the_best_mrr_of_those_that_did() -> None:
    """The card records every candidate the ship rule compared out of fold
    (`train.ranker.ship_rule`, written in train/ranker/README.md): the shipped one passed each
    of its checks, beat its own best single feature, and no passing candidate had a higher MRR."""
    rule = model_card()["ship_rule"]
    shipped = rule["candidates"][rule["shipped"]]
    assert rule["reference"] in rule["candidates"] and rule["queries"] >= 1000
    assert shipped["passes"] and all(ship_rule.passed(v) for v in shipped["checks"].values())
    assert shipped["all"]["mrr"] > shipped["best_single_feature"]["mrr"]
    assert shipped["all"]["mrr"] >= rule["candidates"][rule["reference"]]["all"]["mrr"] - ship_rule.MRR_MARGIN
    assert shipped["all"]["mrr"] == max(c["all"]["mrr"] for c in rule["candidates"].values() if c["passes"])
    assert model_card()["features"] == shipped["features"]


def test_the_shipped_nothing_related_decision_kept_every_kind_within_its_cost_cap() -> None:
    """The decision's out-of-fold figures (`train/ranker/absence.py`, rule in
    train/ranker/README.md): no query kind had more than the cap of its answerable queries with
    the gold in the first 5 emptied, and it emptied more where nothing was related than the
    first candidate's P alone at the same cap."""
    card = model_card()
    figures, decision = card["nothing_related"], card["search"]["nothing_related"]
    learned = figures["learned"]
    assert learned["cuts"] == {k: round(v, 4) for k, v in decision["cuts"].items()}
    for kind, f in learned.items():
        if kind != "cuts" and f["cost: gold in the first 5 emptied"]["of"]:
            assert f["cost: gold in the first 5 emptied"]["share"] <= absence.COST_CAP
    recorded = "saving: nothing related, recorded answered empty"
    assert learned["all"][recorded]["share"] > figures["first candidate's P alone"]["all"][recorded]["share"]
    assert decision["min_candidates"] == figures["min_candidates"] >= 1


def test_features_follow_the_signals() -> None:
    signals = _signals()
    signals.fields = {"related": (1.0, 0.8, 0.6, 0.0, 0.5, 0.0, 0.7)}
    keys = candidates(signals)
    assert keys == sorted(keys) and set(keys) >= {"related", "unrelated", "f1"}  # by key: the model orders them
    by_key = candidate_features(signals, keys)
    related, unrelated = as_mapping(by_key["related"]), as_mapping(by_key["unrelated"])
    assert len(by_key["related"]) == len(FEATURES)
    assert related["lexical_rr"] == related["dense_rr"] == related["refs_rr"] == related["location_rr"] == 1.0
    assert related["lexical_share"] == related["edited_share"] == 1.0 and related["firsts"] == 4
    assert related["title_match"] == 1.0 and related["diff_match"] == 0.6 and related["words_match"] == 0.7
    assert related["cosine"] == 0.82 and unrelated["cosine"] == 0.31  # absolute: not a share of the best
    assert related["title_rr"] == related["subject_rr"] == related["since_rr"] == 0.0  # no commits in memory
    assert unrelated["refs_rr"] == 0.0 and unrelated["edited_share"] == 0.0 and unrelated["title_match"] == 0.0
    assert unrelated["dense_gap"] < 0 and unrelated["bm25_lead"] < 0


def test_a_model_trained_on_other_features_is_refused(tmp_path: Path) -> None:
    shipped = Path(__file__).resolve().parents[2] / "codemem" / "ranking" / "models"
    for name in ("ranker.txt", "ranker.json"):
        shutil.copy(shipped / name, tmp_path / name)
    card = json.loads((tmp_path / "ranker.json").read_text())
    assert set(card["features"]) <= set(FEATURES)  # the shipped model reads columns this code computes
    assert LearnedRanker.load(tmp_path).features == tuple(card["features"])
    card["features"] = card["features"][:-1] + ["something_else"]
    (tmp_path / "ranker.json").write_text(json.dumps(card))
    with pytest.raises(ModelMismatch, match="retrain"):
        LearnedRanker.load(tmp_path)


def test_a_model_reads_its_own_columns_of_the_features() -> None:
    """`FEATURES` is what the code computes; a model trained on some of them reads those, in its
    card's order (the shipped model leaves the time features out: `train/ranker/README.md`)."""
    ranker = packaged()
    signals = _signals()
    keys = candidates(signals)
    full = candidate_features(signals, keys)
    x = np.asarray([[full[k][FEATURES.index(f)] for f in ranker.features] for k in keys])
    p = ranker.probabilities(ranker.trees.raw_score(x))
    scores = ranker.rank(signals).scores
    assert [scores[k] for k in keys] == pytest.approx(list(p))


def _trajectory(problem: str, f: str, g: str) -> dict[str, object]:
    """A mini-swe-agent trajectory, as `agents.mini_messages` reads them: the task, a look at the
    code, a sed edit, a test run and the submitted diff."""
    diff = (f"diff --git a/pkg/{f}.py b/pkg/{f}.py\n--- a/pkg/{f}.py\n+++ b/pkg/{f}.py\n"
            f"@@ -1,2 +1,2 @@ def {g}():\n-    return {g}_old()\n+    return {g}_new()\n")
    shell = "THOUGHT: {0}\n\n```bash\n{1}\n```"
    return {"messages": [
        {"role": "system", "content": "You are a helpful assistant that can interact with a computer shell."},
        {"role": "user", "content": f"<pr_description>\nConsider the following PR description:\n{problem}\n"
                                    "</pr_description>\n\n<instructions>The harness's rules.</instructions>"},
        {"role": "assistant", "content": shell.format(f"Let me look at {g}.", f"grep -n {g} pkg/{f}.py")},
        {"role": "user", "content": f"<returncode>0</returncode>\n<output>\n1:def {g}():\n</output>"},
        {"role": "assistant", "content": shell.format("Fix it.", f"sed -i 's/{g}_old/{g}_new/' pkg/{f}.py")},
        {"role": "user", "content": "<returncode>0</returncode>\n<output>\n</output>"},
        {"role": "assistant", "content": shell.format("Run the tests.", f"python -m pytest tests/test_{f}.py -q")},
        {"role": "user", "content": "<returncode>0</returncode>\n<output>\n3 passed in 0.10s\n</output>"},
        {"role": "assistant", "content": shell.format("Submit.", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached")},
        {"role": "user", "content": diff},
    ]}


def test_a_trajectory_is_replayed_without_the_system_prompt_or_the_harness_rules() -> None:
    from train.ranker.agents import mini_messages

    messages = mini_messages(_trajectory("Cache key collides", "cache", "resolve_cache_key"))
    assert [m.role for m in messages[:2]] == ["user", "assistant"] and len(messages) == 9
    assert messages[0].text.endswith("Cache key collides\n</pr_description>")
    assert "harness's rules" not in messages[0].text


def test_the_model_ranks_every_search_and_says_what_carried_it(memory) -> None:  # type: ignore[no-untyped-def]
    from codemem.contract.types import AddRequest, SearchRequest
    from train.ranker.agents import mini_messages

    tasks = [("t1", "Cache key collides for unicode paths in resolve_cache_key", "cache", "resolve_cache_key"),
             ("t2", "Colour bar ticks overlap when the axis is logarithmic", "colorbar", "tick_locator"),
             ("t3", "Timezone offset lost when serialising naive datetimes", "dates", "to_iso")]
    for sid, problem, f, g in tasks:
        memory.add(AddRequest(request_id=f"{sid}:0", user_id="u", session_id=sid,
                              messages=mini_messages(_trajectory(problem, f, g))))
    query = SearchRequest(user_id="u", query="resolve_cache_key returns the same key for two unicode paths", top_k=3)
    hits = memory.search(query)
    assert hits and hits[0].session_id == "t1"
    # Its metadata gives the model's calibrated P(related) and the features that carried it.
    first = hits[0].metadata
    assert 0.0 < float(first["relevance"]) <= 1.0 and first["relevance"] == pytest.approx(hits[0].score, abs=1e-4)
    assert set(first["features"]) <= set(FEATURES) and len(first["features"]) == 3


def test_a_commit_memory_is_ranked_by_the_model(memory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from codemem.contract.types import SearchRequest
    from codemem.importers.git import ingest_git
    from tests.history import build_history

    history = build_history(tmp_path / "flask")
    ingest_git(memory, str(history.path), "dev", progress=False)
    report = "send_file fails for a file opened in text mode\n\nPassing a text file object to send_file raises " \
             "instead of reading it."
    signals, _ = memory.signals("dev", report, DEFAULT_SEARCH, DEFAULT_SEARCH.retrieval.candidates)
    assert signals.commit_ranks["title"] and signals.commits  # the commit features are there
    hits = memory.search(SearchRequest(user_id="dev", query=report, top_k=5))
    first = hits[0].metadata
    assert history.shas["sendfile"] in first["commits"]  # the merge that brought the fix
    assert "features" in first and first["relevance"] == pytest.approx(hits[0].score, abs=1e-4)
    assert first["matched_commits"][0]["subject"] == "send_file rejects text file objects"
    # A report naming the code an older change created: the fix is still among the first two.
    twice = "Registering the same blueprint twice under two names breaks\n\nA blueprint registered twice " \
            "with differing names raises in Blueprint.register."
    top = memory.search(SearchRequest(user_id="dev", query=twice, top_k=5))[:2]
    assert any(history.shas["twice"] in h.metadata["commits"] for h in top)
