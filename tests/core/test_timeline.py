"""Project chat over time (`codemem/timeline/`): dated turns, the current value first with
the superseded one marked, relative dates resolved against the session's date, quiet on a
subject the memory never discussed, and coding sessions answered as before."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime
from pathlib import Path

import numpy as np

from codemem.config import Embedding
from codemem.contract.types import AddRequest, Message, SearchRequest
from codemem.encoders import ShippedEmbedder
from codemem.memory import Memory
from codemem.ranking.answer import MAX_RESPONSE_BYTES
from codemem.timeline import turns
from codemem.timeline.dates import resolve
from codemem.timeline.decisions import packaged
from codemem.timeline.turns import DEFAULT_TURNS

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "timeline" / "project.json"
FIX = [
    "QuerySet.bulk_create() crashes with a TypeError when ignore_conflicts=True",
    "Fixed bulk_create in django/db/models/query.py; tests in tests/bulk_create pass",
]


def _ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


def _add_project(memory: Memory, user: str) -> None:
    for s in json.loads(FIXTURE.read_text())["sessions"]:
        start = _ms(s["date"])
        messages = [Message("user" if i % 2 == 0 else "assistant", text, start + i * 60_000)
                    for i, text in enumerate(s["messages"])]
        memory.add(AddRequest(f"{s['id']}-0", user, s["id"], messages))


def test_the_current_value_comes_first_and_the_superseded_one_is_marked(memory: Memory) -> None:
    # Given two statements of a decision, the first said as plainly as people say it.
    said = ["Omar: We use Alembic for database migrations.", "Omar: We switched from Alembic to Aerich for database migrations."]
    assert packaged().decides(said, ShippedEmbedder().embed(said, Embedding().max_tokens)).all()
    _add_project(memory, "p")
    hits = memory.search(SearchRequest(user_id="p", query="Which migration tool do we use now?", top_k=20))
    assert hits[0].session_id == "switch" and "Aerich" in hits[0].content
    assert str(hits[0].content).startswith("[2024-03-14] ") and hits[0].metadata["date"] == "2024-03-14"
    assert "superseded_by" not in hits[0].metadata
    old = next(h for h in hits if "We use Alembic" in str(h.content))
    by = old.metadata["superseded_by"]
    assert isinstance(by, dict) and (by["session_id"], by["date"]) == ("switch", "2024-03-14") and "Aerich" in by["text"]
    assert "superseded on 2024-03-14: Omar: We switched from Alembic to Aerich" in str(old.content)
    assert hits.index(old) > 0


def test_a_relative_date_is_resolved_against_its_sessions_date(memory: Memory) -> None:
    _add_project(memory, "p")
    hits = memory.search(SearchRequest(user_id="p", query="When did we move hosting to Fly?", top_k=20))
    moved = next(h for h in hits if "moved hosting" in str(h.content))
    assert moved.metadata["dates"] == {"Yesterday": "2024-03-13"}
    assert '"Yesterday" = 2024-03-13' in str(moved.content)


def test_a_subject_never_discussed_gets_little_or_nothing(memory: Memory) -> None:
    _add_project(memory, "p")
    asked = memory.search(SearchRequest(user_id="p", query="Which migration tool do we use now?", top_k=20))
    absent = memory.search(SearchRequest(user_id="p", query="Which frontend framework do we use?", top_k=20))
    assert len(asked) > DEFAULT_TURNS.quiet_turns and not any(h.metadata.get("quiet") for h in asked)
    assert len(absent) <= DEFAULT_TURNS.quiet_turns and all(h.metadata.get("quiet") for h in absent)
    present = absent[0].metadata["subject_present"]
    assert isinstance(present, dict) and present["probability"] < DEFAULT_TURNS.quiet_below


def test_coding_sessions_are_answered_as_experiences(memory: Memory) -> None:
    _add_project(memory, "p")
    memory.add(AddRequest("fix-0", "p", "fix", [Message("user", FIX[0]), Message("assistant", FIX[1])]))
    hits = memory.search(SearchRequest(user_id="p", query="bulk_create TypeError with ignore_conflicts", top_k=20))
    assert hits[0].session_id == "fix" and hits[0].metadata["kind"] == "card"
    assert not any(h.metadata.get("kind") == "turn" for h in hits)


def test_a_dialogue_reading_answers_as_the_search_under_any_turn_configuration(memory: Memory) -> None:
    """What an evaluation weighs turn configurations by: one reading, answered under each."""
    _add_project(memory, "p")
    req = SearchRequest(user_id="p", query="Which migration tool do we use now?", top_k=20)
    reading = memory.dialogue_reading(req)
    assert reading is not None and reading.asked is not None and reading.asked.about_now
    shape = memory.search_config.answer.fitted(None)
    for config in (DEFAULT_TURNS, dataclasses.replace(DEFAULT_TURNS, supersede_cosine=0.0, replaced_must_decide=False,
                                                      superseded_factor=0.01)):
        search = memory.search_config.replace({"turns": config})
        decided = turns.decide(req.text, reading, req.top_k, shape.budget_tokens, MAX_RESPONSE_BYTES, config)
        assert [(h.id, h.score, h.content) for h in decided] == [(h.id, h.score, h.content) for h in memory.search(req, search)]
    loose = dataclasses.replace(DEFAULT_TURNS, supersede_cosine=0.0, replaced_must_decide=False)
    marked = [h for h in turns.decide(req.text, reading, 20, shape.budget_tokens, MAX_RESPONSE_BYTES, loose)
              if "superseded_by" in h.metadata]
    assert marked  # every earlier turn is replaced by a later decision this close ...
    again = turns.decide(req.text, reading, 20, shape.budget_tokens, MAX_RESPONSE_BYTES, DEFAULT_TURNS)
    assert len([h for h in again if "superseded_by" in h.metadata]) < len(marked)  # ... and the reading kept none of it
    coding = SearchRequest(user_id="p", query="bulk_create TypeError with ignore_conflicts", top_k=20)
    memory.add(AddRequest("fix-0", "p", "fix", [Message("user", FIX[0]), Message("assistant", FIX[1])]))
    assert memory.dialogue_reading(coding) is None  # answered by experiences


def test_relative_dates() -> None:
    thursday = _ms("2024-03-14T10:00:00Z")
    found = {r.phrase: r.label() for r in resolve(
        "Two days ago we met, last week was busy, we shipped last Friday and we ship next month.", thursday)}
    assert found == {"Two days ago": "2024-03-12", "last week": "2024-03-04 to 2024-03-10",
                     "last Friday": "2024-03-08", "next month": "2024-04-01 to 2024-04-30"}
    assert [r.label() for r in resolve("We deployed on Monday; the review is on Friday.", thursday)] == [
        "2024-03-11", "2024-03-15"]
    assert resolve("Nothing relative here.", thursday) == []


def test_the_decision_reader_tells_decisions_from_look_alikes() -> None:
    # Written for this test (not from the reader's training sentences or its validation suite).
    decided = ["Going forward the nightly exports are written by dagster, cron is retired.",
               "bumped the worker pool from 8 to 16 threads in prod config",
               "We picked Meilisearch over Elasticsearch for the product search."]
    not_decided = ["Karim drove from Porto to Braga for the client workshop.",
                   "Should we try Meilisearch at some point? No rush.",
                   "The dashboard took 4 seconds to load this morning, up from 2."]
    texts = decided + not_decided
    reader = packaged()
    read = reader.decides(texts, ShippedEmbedder().embed(texts, Embedding().max_tokens))
    assert read.tolist() == [True] * len(decided) + [False] * len(not_decided)
    assert reader.embedder == ShippedEmbedder().name
    assert reader.probabilities([], np.zeros((0, ShippedEmbedder().dim))).shape == (0,)


def test_readers_trained_on_another_encoder_s_vectors_are_not_consulted(settings, monkeypatch) -> None:
    """The question and decision readers read vectors: over a memory whose encoder is not the
    one they were trained on they read nothing (no weights applied to a space they never saw),
    and the Search still answers from the words."""
    from codemem.timeline.decisions import DecisionReader
    from codemem.timeline.questions import QuestionReader

    class Renamed(ShippedEmbedder):
        def __init__(self) -> None:
            super().__init__()
            self.name = "codemem-tests/another-encoder@1"

    def never(*args: object) -> None:
        raise AssertionError("a reader read another encoder's vectors")

    with Memory(settings, embedder=Renamed()) as memory:
        _add_project(memory, "p")
        monkeypatch.setattr(QuestionReader, "read", never)
        monkeypatch.setattr(DecisionReader, "decides", never)
        hits = memory.search(SearchRequest(user_id="p", query="Which migration tool do we use now?", top_k=20))
    assert any("Aerich" in str(h.content) for h in hits)
