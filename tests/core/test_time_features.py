"""The relevance model's time features (`codemem/ranking/time_features.py`): what each
candidate's date and words say beside the others'."""

from __future__ import annotations

import math
from datetime import datetime
from pathlib import Path

from codemem.contract.types import AddRequest, Message
from codemem.importers.git import ingest_git
from codemem.memory import Memory
from codemem.ranking.fields import CardFields
from codemem.ranking.recipes import DEFAULT_SEARCH
from codemem.ranking.time_features import TIME_FEATURES, covered_by, time_matches
from codemem.store.schema import key_of
from codemem.timeline.questions import Asked
from tests.history import build_history


def _ms(day: str) -> int:
    return int(datetime.fromisoformat(f"{day}T10:00:00+00:00").timestamp() * 1000)


def _card(text: str, day: str, said: list[str] | None = None) -> CardFields:
    meta = {"conversation": True, "said": said} if said is not None else {}
    return CardFields.of(f"## Task\n{text}", meta, _ms(day))


CARDS = {
    "old": _card("the worker queue runs on rabbitmq with three consumers", "2025-01-10"),
    "new": _card("the worker queue moved to redis streams, consumers unchanged", "2025-03-02"),
    "other": _card("the login page keeps a stale csrf cookie", "2025-02-01"),
}


def features(text: str, cards: dict[str, CardFields] = CARDS, asked: Asked | None = None) -> dict[str, dict[str, float]]:
    return {k: dict(zip(TIME_FEATURES, v, strict=True))
            for k, v in (time_matches(text, cards, asked) if asked else time_matches(text, cards)).items()}


def test_recency_ranks_the_candidates_newest_first() -> None:
    f = features("which queue do the workers use?")
    assert (f["new"]["recency_rr"], f["other"]["recency_rr"], f["old"]["recency_rr"]) == (1.0, 0.5, 1 / 3)


def test_a_newer_candidate_holding_the_same_words_of_the_question_is_seen_from_both_sides() -> None:
    f = features("which queue do the worker consumers use?")
    assert f["old"]["newer_same"] > 0.5 and f["old"]["older_same"] == 0.0
    assert f["new"]["older_same"] > 0.5 and f["new"]["newer_same"] == 0.0
    assert f["other"]["newer_same"] == f["other"]["older_same"] == 0.0  # holds none of the question's words


def test_what_the_question_asks_of_time_is_the_same_for_every_candidate() -> None:
    f = features("which queue do the workers use?", asked=Asked(0.7, 0.2, 0.05, "now"))
    assert all((v["asks_now"], v["asks_when"], v["asks_asof"]) == (0.7, 0.2, 0.05) for v in f.values())
    assert all(v["asks_now"] == 0.0 for v in features("which queue do the workers use?").values())  # not read: nothing asked


def test_recency_among_the_related_leaves_out_candidates_that_do_not_talk_about_the_subject() -> None:
    cards = {**CARDS, "newest": _card("the login page csrf cookie is fixed", "2025-06-01")}
    f = features("which queue do the worker consumers use?", cards)
    assert f["newest"]["recency_rr"] == 1.0 and f["newest"]["recency_related"] == 0.0  # newest, but not about queues
    assert f["new"]["recency_related"] == 1.0 and f["old"]["recency_related"] == 0.5


def test_a_candidate_without_a_date_reads_not_known_never_an_age() -> None:
    cards = {**CARDS, "undated": CardFields.of("## Task\nthe worker queue was rebuilt", {}, 0)}
    f = features("which queue do the worker consumers use?", cards, Asked(0.9, 0.05, 0.0, "now"))
    dated = ("recency_rr", "recency_related", "newer_same", "older_same", "date_named")
    assert all(math.isnan(f["undated"][name]) for name in dated)
    assert f["undated"]["asks_now"] == 0.9  # the question is read all the same
    assert f["new"]["recency_rr"] == 1.0 and f["old"]["recency_rr"] == 1 / 3  # ranked among the dated only
    assert "undated" not in covered_by("which queue do the worker consumers use?", cards)


def test_a_period_the_question_names_marks_the_candidates_of_that_period() -> None:
    f = features("what did we change in the queue in march 2025?")
    assert f["new"]["date_named"] == 1.0 and f["old"]["date_named"] == f["other"]["date_named"] == 0.0


def test_a_conversation_is_compared_by_every_word_it_said_not_its_opening_alone() -> None:
    cards = {"a": _card("standup", "2025-01-01", said=["deploys", "go", "through", "jenkins"]),
             "b": _card("standup", "2025-02-01", said=["deploys", "go", "through", "buildkite"])}
    f = features("what do deploys go through?", cards)
    assert f["a"]["newer_same"] == 1.0 and f["b"]["older_same"] == 1.0


def test_no_candidates_no_features() -> None:
    assert time_matches("anything now?", {}) == {}


def test_an_older_candidate_is_covered_by_the_newest_later_one_that_holds_all_its_words_of_the_question() -> None:
    cards = {**CARDS, "newest": _card("workers consume the queue from redis streams, five consumers", "2025-05-20")}
    covered = covered_by("which queue do the worker consumers use?", cards)
    # old holds {queue, worker, consumers}; new holds {queue, worker, consumers} too, newest only {queue, consumers}
    assert covered == {"old": "new"}
    assert covered_by("which queue do the consumers use?", cards) == {"old": "newest", "new": "newest"}
    assert covered_by("what breaks the login page?", cards) == {}  # nothing newer holds what the others hold


def test_asked_about_now_the_chosen_block_comes_newest_first_and_the_rest_keeps_the_model_s_order() -> None:
    from codemem.ranking.assemble import FoundExperience
    from codemem.ranking.searcher import newest_first
    from codemem.ranking.types import Candidate

    def group(key: str) -> FoundExperience:
        return FoundExperience(key, 1.0, Candidate(f"card-{key}", 0.0, {"session_key": key, "kind": "card"}))

    groups = [group(k) for k in ("old", "other", "new", "undated", "tail")]
    cards = {**CARDS, "undated": CardFields.of("## Task\nx", {}, 0), "tail": _card("queue tail", "2026-01-01")}
    ordered = newest_first(groups, {"old", "new", "undated", "other"}, cards)
    # dated members of the block newest first; the undated one and what is outside keep their places after them
    assert [g.session_key for g in ordered] == ["new", "other", "old", "undated", "tail"]


def test_an_unknown_newest_first_choice_is_refused() -> None:
    import pytest

    from codemem.ranking.recipes import DEFAULT_SEARCH

    with pytest.raises(ValueError, match="newest_first_when_now"):
        DEFAULT_SEARCH.replace({"calibration.newest_first_when_now": "always"})


def test_at_search_a_commit_s_time_features_read_not_known_and_a_dated_session_s_are_read(memory: Memory, tmp_path: Path) -> None:
    # The model learns commits undated (a past-fix history is cut around its fix), so at Search
    # a commit's time features must read "not known" however its card is dated.
    ingest_git(memory, str(build_history(tmp_path / "flask").path), "repo", progress=False)
    memory.add(AddRequest("a1", "repo", "fix-blueprint", [
        Message("user", "Registering a blueprint twice with differing names fails", timestamp=_ms("2024-02-01")),
        Message("assistant", "Fixed the blueprint name check in flask/app.py", timestamp=_ms("2024-02-01"))]))
    memory.refresher.flush()
    signals, _ = memory.signals("repo", "registering a blueprint twice", DEFAULT_SEARCH, 50)
    assert signals.commits, "the history's commits are candidates"
    assert key_of("repo", "fix-blueprint") in signals.time
    assert signals.commits.isdisjoint(signals.time)
