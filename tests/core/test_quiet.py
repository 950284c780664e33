"""Answers that stay quiet when nothing relevant is in memory, show as much of each experience
as its P(related) warrants, and say why each experience was returned."""

from __future__ import annotations

import pytest

from codemem.config import Settings
from codemem.contract.types import AddRequest, Message, SearchRequest
from codemem.memory import Memory
from codemem.memoryarena import TextMemories
from codemem.ranking.features import FEATURES
from codemem.ranking.recipes import DEFAULT_SEARCH
from tests import coding_memory
from tests.answers import EVIDENCE

FIX = [
    "QuerySet.bulk_create() crashes with a TypeError when ignore_conflicts=True on PostgreSQL",
    "I traced it to django/db/models/query.py: _batched_insert passes on_conflict to the backend. " + "x " * 3000,
    "Fixed bulk_create in django/db/models/query.py; tests in tests/bulk_create pass",
]
# Coding chores: each names its file (a session naming no code and running none is a
# conversation, which the calibration does not judge: tests/core/test_conversations.py).
CHORES = [
    "Update the colour of the login button in admin/css/login.css",
    "Translate the French locale strings for the date picker in locale/fr/LC_MESSAGES/djangojs.po",
    "Bump the copyright year in docs/conf.py",
]
QUERY = "bulk_create TypeError with ignore_conflicts in _batched_insert"
UNSURE = "update the translations and the docs"
LOUD = DEFAULT_SEARCH.replace({"calibration.quiet_below": 0.0})  # never quiet
QUIET = DEFAULT_SEARCH.replace({"calibration.quiet_below": 1.0})  # quiet whatever the model says


def _fill(memory: Memory) -> None:
    memory.add(AddRequest("fix", "dev", "fix", [Message("user" if i == 0 else "assistant", t) for i, t in enumerate(FIX)]))
    for i, text in enumerate(CHORES):
        memory.add(AddRequest(f"c{i}", "dev", f"chore-{i}", [Message("user", text)]))


def _search(memory: Memory, query: str, config=DEFAULT_SEARCH) -> list:  # type: ignore[no-untyped-def]
    return memory.search(SearchRequest(user_id="dev", query=query, top_k=50), config)


def test_each_experience_says_why_it_was_returned(memory: Memory) -> None:
    _fill(memory)
    hits = _search(memory, QUERY)
    card = hits[0]
    assert card.session_id == "fix" and card.metadata["kind"] == "card"
    assert DEFAULT_SEARCH.calibration.quiet_below <= card.metadata["relevance"] < 1
    signals = card.metadata["signals"]
    assert signals["lexical_rank"] == 1 and signals["location"] > 0 and signals["cosine"] > 0.3
    assert "quiet" not in card.metadata
    assert card.metadata["evidence"]  # the best experience carries its evidence
    # The features that carried it, by their contribution to the model's score.
    assert card.metadata["features"] and set(card.metadata["features"]) <= set(FEATURES)
    assert all(h.metadata["relevance"] <= card.metadata["relevance"] for h in hits)


def test_an_answer_with_nothing_relevant_is_a_few_short_cards(memory: Memory) -> None:
    _fill(memory)
    # Related to two chores alike, sure of neither: quiet, not empty (it shares their words).
    quiet = _search(memory, UNSURE)
    assert quiet, "a quiet answer still lists what the memory holds nearby"
    assert all(h.metadata["kind"] == "card" and h.metadata["quiet"] for h in quiet)
    assert all(h.metadata["relevance"] < DEFAULT_SEARCH.calibration.quiet_below for h in quiet)
    # A few experiences, a little evidence under the first and short cards after it: nothing
    # related should cost a reader little.
    shape = DEFAULT_SEARCH.answer
    assert len(quiet) <= shape.named_experiences < shape.experiences
    assert all(not h.metadata["evidence"] and len(h.content) <= shape.short_card_chars for h in quiet[1:])
    assert len(str(quiet[0].content).partition(EVIDENCE)[2]) <= shape.quiet_first_evidence_chars + 200


def test_an_off_topic_question_to_a_one_experience_memory_is_quiet(memory: Memory) -> None:
    # The only experience is the best candidate on every relative feature (first in every
    # ranking, all of the best score): only the absolute ones say that it is not related.
    memory.add(AddRequest("fix", "dev", "fix", [Message("user" if i == 0 else "assistant", t) for i, t in enumerate(FIX)]))
    hits = _search(memory, "How do I configure the kubernetes ingress timeout for websockets?")
    assert [h.session_id for h in hits] == ["fix"] and hits[0].metadata["quiet"]
    assert hits[0].metadata["relevance"] < DEFAULT_SEARCH.calibration.quiet_below
    hits = _search(memory, "zqxwv plorbnik frumious")  # words that occur nowhere
    assert hits and all(h.metadata.get("quiet") for h in hits)
    assert not _search(memory, QUERY)[0].metadata.get("quiet")  # asked about it, it speaks


def test_a_quiet_answer_drops_the_evidence_and_cuts_the_cards(memory: Memory) -> None:
    _fill(memory)
    short = {"answer.short_card_chars": 200, "answer.quiet_first_evidence_chars": 1_000,
             "calibration.relevance_floor": 0.0}
    loud = _search(memory, QUERY, LOUD.replace(short))
    quiet = _search(memory, QUERY, QUIET.replace(short))
    assert quiet[0].session_id == loud[0].session_id == "fix"
    # The first experience keeps a little evidence; the others are short cards (their task's
    # headline and outcome, no evidence), nothing loose.
    assert loud[0].metadata["evidence"] and quiet[0].metadata["evidence"]
    assert len(quiet[0].content) < len(loud[0].content)
    assert len(quiet) > 1
    for hit in quiet[1:]:
        assert hit.metadata["kind"] == "card" and not hit.metadata["evidence"]
        assert len(hit.content) <= 200 and "\nOutcome: " in hit.content and "## " not in hit.content
    assert sum(len(h.content) for h in quiet) < sum(len(h.content) for h in loud) / 3


def test_a_loud_answer_shows_the_related_cards_whole_and_names_the_rest(memory: Memory) -> None:
    _fill(memory)
    hits = _search(memory, QUERY, DEFAULT_SEARCH.replace({"calibration.relevance_floor": 0.0}))
    threshold = DEFAULT_SEARCH.calibration.quiet_below
    assert not any(h.metadata.get("quiet") for h in hits) and len(hits) > 1
    assert hits[0].metadata["relevance"] >= threshold
    for hit in hits[1:]:  # only the best carries evidence; what is not related is named in short
        assert not hit.metadata["evidence"]
        if hit.metadata["relevance"] < threshold:
            assert len(hit.content) <= DEFAULT_SEARCH.answer.short_card_chars and "## " not in hit.content


def test_quiet_is_off_when_its_threshold_is_zero(memory: Memory) -> None:
    _fill(memory)
    hits = _search(memory, UNSURE, LOUD)
    assert hits and not any(h.metadata.get("quiet") for h in hits)


def test_a_deployment_cannot_set_a_threshold_outside_zero_to_one() -> None:
    for name in ("CODEMEM_QUIET_BELOW", "CODEMEM_RELEVANCE_FLOOR"):
        with pytest.raises(ValueError, match="between 0 and 1"):
            Settings.from_env({name: "1.5"})
    assert Settings.from_env({"CODEMEM_QUIET_BELOW": "0"}).search.config().calibration.quiet_below == 0.0


# Nothing related, in a memory of a few experiences (fewer candidates than the nothing-related
# decision judges): a query that shares no code, few of its words and none of its meaning with
# anything stored gets a quiet answer that names the nearest experiences (a hand-set "nothing
# related" rule emptied answerable questions: issue 47); a related question still finds its
# experience first. In a larger memory the learned decision answers it empty (below).
INVENTED = "Plombrix quervane stollicut yarbenthal"


@pytest.mark.parametrize("query", [INVENTED, "What should I update in my garden plan for next year's tomato harvest?"])
def test_a_query_about_nothing_stored_is_a_short_quiet_answer(memory: Memory, query: str) -> None:
    _fill(memory)
    hits = _search(memory, query)
    assert hits and all(h.metadata["quiet"] for h in hits)
    assert len(hits) <= DEFAULT_SEARCH.answer.named_experiences
    assert sum(len(h.content) for h in hits) / 4 <= 1_500  # a few hundred tokens: nothing here to read


def test_an_off_topic_question_on_a_one_memory_store_is_quiet(memory: Memory) -> None:
    memory.add(AddRequest("fix", "dev", "fix", [Message("user" if i == 0 else "assistant", t) for i, t in enumerate(FIX)]))
    hits = _search(memory, "Which wildflowers bloom first in an alpine meadow after the snow melts?")
    assert [h.session_id for h in hits] == ["fix"] and hits[0].metadata["quiet"]
    assert _search(memory, QUERY)[0].session_id == "fix"  # a related question still finds it


def test_a_related_question_in_other_words_is_still_found(memory: Memory) -> None:
    _fill(memory)
    hits = _search(memory, "bulk insert breaks when ignoring conflicting rows", DEFAULT_SEARCH)
    assert hits and hits[0].session_id == "fix"


def test_a_memory_asked_about_what_it_never_held_answers_empty_and_still_answers_what_it_holds(memory: Memory) -> None:
    coding_memory.fill(memory)
    for query in (coding_memory.INVENTED, coding_memory.OFF_TOPIC):
        assert _search(memory, query) == []
        kept = _search(memory, query, DEFAULT_SEARCH.replace({"calibration.empty_when_unrelated": False}))
        assert kept and all(h.metadata["quiet"] for h in kept)  # asked not to answer empty: the nearest, quiet
    question, session = coding_memory.RELATED
    hits = _search(memory, question)
    assert hits[0].session_id == session and not hits[0].metadata.get("quiet")


@pytest.mark.parametrize("gate", [{"calibration.relevance_floor": 0.99}, {"calibration.quiet_below": 1.0}])
def test_no_gate_drops_one_of_the_experiences_every_answer_names(memory: Memory, gate: dict[str, float]) -> None:
    _fill(memory)
    for i in range(4):  # eight experiences in all
        memory.add(AddRequest(f"o{i}", "dev", f"other-{i}", [Message("user", f"Rename the helper in utils/strings_{i}.py")]))
    ungated = _search(memory, UNSURE, DEFAULT_SEARCH.replace({"calibration.relevance_floor": 0.0,
                                                              "calibration.quiet_below": 0.0}))
    gated = _search(memory, UNSURE, DEFAULT_SEARCH.replace(gate))
    named = DEFAULT_SEARCH.answer.named_experiences
    assert len(ungated) > named
    assert [h.session_id for h in gated[:named]] == [h.session_id for h in ungated[:named]]


def test_memoryarena_recalls_every_earlier_subtask_however_little_it_shares(memory: Memory) -> None:
    # Its chunks are the earlier subtasks of one task: each a possible dependency of the next,
    # so its recall never empties an answer for lack of shared words.
    arena = TextMemories(memory)
    arena.initialize("arena")
    chunk = "Subtask 1: fixed the rounding in pricing/fares.py; the cheapest fare is now 212.40 euros."
    arena.add("arena", chunk)  # work on code: a Search judges whether it relates
    assert memory.search(SearchRequest(user_id="arena", query=INVENTED, top_k=5))[0].metadata["quiet"]
    assert [r.text for r in arena.recall("arena", INVENTED, 5, 0)] == [chunk]
    # As many subtasks as the nothing-related decision judges, none sharing the question's words.
    arena.initialize("arena2")
    coding_memory.fill(memory, "arena2")
    assert memory.search(SearchRequest(user_id="arena2", query=INVENTED, top_k=5)) == []
    assert len(arena.recall("arena2", INVENTED, 5, 0)) == 5
