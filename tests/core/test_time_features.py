"""The relevance model's time features (`codemem/ranking/time_features.py`): what each
candidate's date and words say beside the others'."""

from __future__ import annotations

from datetime import datetime

from codemem.ranking.fields import CardFields
from codemem.ranking.time_features import TIME_FEATURES, covered_by, time_matches


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


def features(text: str, cards: dict[str, CardFields] = CARDS) -> dict[str, dict[str, float]]:
    return {k: dict(zip(TIME_FEATURES, v, strict=True)) for k, v in time_matches(text, cards).items()}


def test_recency_ranks_the_candidates_newest_first() -> None:
    f = features("which queue do the workers use?")
    assert (f["new"]["recency_rr"], f["other"]["recency_rr"], f["old"]["recency_rr"]) == (1.0, 0.5, 1 / 3)


def test_a_newer_candidate_holding_the_same_words_of_the_question_is_seen_from_both_sides() -> None:
    f = features("which queue do the worker consumers use?")
    assert f["old"]["newer_same"] > 0.5 and f["old"]["older_same"] == 0.0
    assert f["new"]["older_same"] > 0.5 and f["new"]["newer_same"] == 0.0
    assert f["other"]["newer_same"] == f["other"]["older_same"] == 0.0  # holds none of the question's words


def test_the_question_cues_are_read_for_every_candidate() -> None:
    now = features("which queue are the workers on now?")
    plain = features("how are the workers configured?")
    assert all(v["asks_current"] == 1.0 for v in now.values())
    assert all(v["asks_current"] == 0.0 for v in plain.values())
    assert all(v["asks_time"] == 1.0 for v in features("when did the workers change queue?").values())


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
