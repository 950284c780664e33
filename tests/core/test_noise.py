"""Noise left out of an answer: experiences scoring far below the best, and evidence repeated."""

from __future__ import annotations

from pathlib import Path

import pytest

from codemem.config import Settings
from codemem.contract.types import AddRequest, Message, SearchRequest
from codemem.encoders import ShippedEmbedder
from codemem.memory import Memory
from codemem.memoryarena import TextMemories
from codemem.ranking.assemble import group_by_session


def _card_id(key: str) -> str:
    return "card-" + key


def test_group_drops_sessions_below_the_floor_and_always_keeps_the_best() -> None:
    scores = {"a": 0.8, "b": 0.3, "c": 0.2}
    assert [g.session_key for g in group_by_session([], scores, _card_id, 10, floor=0.3)] == ["a", "b"]  # 0.2 < 0.24
    assert [g.session_key for g in group_by_session([], scores, _card_id, 10, floor=0.0)] == ["a", "b", "c"]
    assert [g.session_key for g in group_by_session([], {"a": 0.01}, _card_id, 10, floor=1.0)] == ["a"]
    assert group_by_session([], {}, _card_id, 10, floor=0.3) == []


@pytest.mark.parametrize("floor", [-0.1, 1.5])
def test_a_floor_outside_0_to_1_is_refused(floor: float) -> None:
    with pytest.raises(ValueError, match="relevance_floor"):
        Settings().replace({"search.relevance_floor": floor})


FIX = [
    "QuerySet.bulk_create() crashes with a TypeError when ignore_conflicts=True on PostgreSQL",
    "I traced it to django/db/models/query.py: _batched_insert passes on_conflict to the backend",
    "Fixed bulk_create in django/db/models/query.py; tests in tests/bulk_create pass",
]
UNRELATED = [
    "Update the colour of the login button in the admin stylesheet",
    "Translate the French locale strings for the date picker",
    "Bump the copyright year in the LICENSE file",
    "Rename the CI workflow from build.yml to test.yml",
    "Add a section on installing from source to the contributing guide",
]


def test_unrelated_experiences_are_left_out_unless_the_floor_is_off(tmp_path: Path, embedder: ShippedEmbedder) -> None:
    counts = {}
    for floor in (0.3, 0.0):
        memory = Memory(Settings().replace({"storage.data_dir": str(tmp_path / str(floor)), "maintenance.interval_s": 0,
                                             "search.relevance_floor": floor}),
                        embedder=embedder)
        memory.add(AddRequest("fix", "dev", "fix", [Message("user" if i == 0 else "assistant", t) for i, t in enumerate(FIX)]))
        for i, text in enumerate(UNRELATED):
            memory.add(AddRequest(f"u{i}", "dev", f"chore-{i}", [Message("user", text)]))
        hits = memory.search(SearchRequest(user_id="dev", query="bulk_create TypeError with ignore_conflicts", top_k=100))
        assert hits[0].session_id == "fix"
        counts[floor] = len({h.session_id for h in hits})
        memory.close()
    assert counts[0.0] == 1 + len(UNRELATED)  # without the floor every session pads the answer
    assert counts[0.3] < counts[0.0]


def test_memoryarena_recall_keeps_every_chunk_the_budget_allows(memory: Memory) -> None:
    """A user's chunks are the earlier subtasks of one task: any may be a dependency."""
    chunks = TextMemories(memory)
    chunks.initialize("runner")
    for text in [" ".join(FIX), *UNRELATED]:
        chunks.add("runner", text)
    found = chunks.recall("runner", "bulk_create TypeError with ignore_conflicts", top_k=100, budget_tokens=0)
    assert found[0].text.startswith(FIX[0])
    assert len(found) == 1 + len(UNRELATED)


def test_an_answer_carries_each_evidence_text_once(memory: Memory) -> None:
    failure = ("FAILED tests/bulk_create/tests.py::test_ignore_conflicts - TypeError: _batched_insert() got an "
               "unexpected keyword argument 'on_conflict'")
    messages = [Message("user", FIX[0]), Message("assistant", "Tool call Bash: pytest tests/bulk_create"),
                Message("user", failure), Message("assistant", "Tool call Bash: pytest tests/bulk_create  # again"),
                Message("user", "  " + failure.replace(" - ", "\n - ")), Message("assistant", FIX[2])]
    memory.add(AddRequest("r", "dev", "fix", messages))
    hits = memory.search(SearchRequest(user_id="dev", query="_batched_insert on_conflict TypeError", top_k=100))
    text = " ".join(" ".join(str(h.content).split()) for h in hits)
    # The failure was seen twice and its step record quotes it: it is said once.
    assert text.count("FAILED tests/bulk_create/tests.py::test_ignore_conflicts") == 1
    # Evidence is returned verbatim even where the card restates it.
    assert text.count(FIX[0]) == 2
