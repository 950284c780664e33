"""Sessions with no code in them (people talking, the Textual track's data): a conversation
card, each message embedded (the answer to a question is one turn, in other words than the
question's), answers the coding-fitted calibration does not silence, and the same model's
ranking of their sessions."""

from __future__ import annotations

from codemem.contract.types import AddRequest, Message, SearchRequest
from codemem.memory import Memory
from codemem.ranking.recipes import DEFAULT_SEARCH

MAY_8 = 1683553560000
PETS = [
    "Ana: Guess what, we adopted a golden retriever puppy on Saturday!",
    "Ben: No way! What's the little one called?",
    "Ana: Max. He chewed one of my running shoes already.",
    "Ben: Ha, welcome to the club. Ana, how is the new flat?",
    "Ana: Bright and quiet, Ben. The balcony is my favourite spot.",
]
WORK = [
    "Ana: Ben, my manager asked me to lead the quarterly review.",
    "Ben: Ana, that is big news, congratulations!",
    "Ana: Thanks Ben, I am nervous about presenting to the board.",
]
FIX = [
    "QuerySet.bulk_create() crashes with a TypeError when ignore_conflicts=True",
    "Fixed bulk_create in django/db/models/query.py; tests in tests/bulk_create pass",
]
# A threshold no P(related) reaches: a coding memory's answer is quiet.
UNSURE = DEFAULT_SEARCH.replace({"calibration.quiet_below": 1.0})


def _add(memory: Memory, user: str, session: str, texts: list[str]) -> None:
    messages = [Message("user" if i % 2 == 0 else "assistant", t, MAY_8 + i * 1000) for i, t in enumerate(texts)]
    memory.add(AddRequest(f"{session}-0", user, session, messages))


def _embedded(memory: Memory, session: str) -> list[bool]:
    rows = memory.store.rows(f"session_id = '{session}' AND kind = 'message'", columns=["position", "has_vector"])
    return [bool(r["has_vector"]) for r in sorted(rows, key=lambda r: r["position"])]


def test_a_conversations_messages_are_embedded_and_a_coding_sessions_are_not(memory: Memory) -> None:
    _add(memory, "u", "pets", PETS)
    _add(memory, "u", "fix", FIX)
    assert _embedded(memory, "pets") == [True] * len(PETS)
    assert _embedded(memory, "fix") == [False] * len(FIX)


def test_a_question_finds_the_turn_that_answers_it_in_other_words(memory: Memory) -> None:
    _add(memory, "u", "work", WORK)
    _add(memory, "u", "pets", PETS)
    hits = memory.search(SearchRequest(user_id="u", query="What kind of dog does Ana have now?", top_k=20))
    # A memory of conversations is answered turn by turn, each turn dated (`codemem/timeline/`).
    first = hits[0]
    assert first.session_id == "pets" and str(first.content).startswith("[2023-05-08] Ana: Guess what")
    assert first.metadata["conversation"] is True and first.metadata["kind"] == "turn"
    assert not {"edited_files", "edited_symbols", "tests_passed", "errors"} & set(first.metadata)


def test_an_answer_about_conversations_is_not_silenced_by_the_coding_calibration(memory: Memory) -> None:
    _add(memory, "u", "pets", PETS)
    _add(memory, "u", "work", WORK)
    hits = memory.search(SearchRequest(user_id="u", query="Where does Ana like to sit at home?", top_k=20), UNSURE)
    assert hits and not any(h.metadata.get("quiet") for h in hits)
    assert "balcony is my favourite spot" in hits[0].content
    _add(memory, "v", "fix", FIX)
    # A memory of coding work is judged by the calibration: the question shares nothing with it.
    judged = memory.search(SearchRequest(user_id="v", query="Where does Ana like to sit at home?", top_k=20), UNSURE)
    assert judged and all(h.metadata["quiet"] for h in judged)


def test_one_model_ranks_conversations_and_coding_experiences_alike(memory: Memory) -> None:
    _add(memory, "u", "work", WORK)
    _add(memory, "u", "pets", PETS)
    query = SearchRequest(user_id="u", query="What kind of dog does Ana have now?", top_k=20)
    # A memory of conversations: the model orders the sessions, the answer is their turns.
    assert {h.metadata["kind"] for h in memory.search(query)} == {"turn"}
    _add(memory, "u", "fix", FIX)  # a coding experience among them: the same model ranks it
    coding = memory.search(SearchRequest(user_id="u", query="bulk_create TypeError with ignore_conflicts", top_k=20))
    assert coding[0].session_id == "fix" and "features" in coding[0].metadata
