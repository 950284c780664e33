"""Project chat over time (`codemem/timeline/`): dated turns, the current value first with
the superseded one marked, relative dates resolved against the session's date, quiet on a
subject the memory never discussed, and coding sessions answered as before."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from codemem.contract.types import AddRequest, Message, SearchRequest
from codemem.memory import Memory
from codemem.timeline.dates import resolve
from codemem.timeline.facts import Fact, facts, supersedes
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
    _add_project(memory, "p")
    hits = memory.search(SearchRequest(user_id="p", query="Which migration tool do we use now?", top_k=20))
    assert hits[0].session_id == "switch" and "Aerich" in hits[0].content
    assert str(hits[0].content).startswith("[2024-03-14] ") and hits[0].metadata["date"] == "2024-03-14"
    assert "superseded_by" not in hits[0].metadata
    old = next(h for h in hits if "We use Alembic" in str(h.content))
    assert old.metadata["superseded_by"] == {"session_id": "switch", "date": "2024-03-14", "value": "aerich"}
    assert "superseded on 2024-03-14: now aerich" in str(old.content)
    assert hits.index(old) > 0


def test_a_relative_date_is_resolved_against_its_sessions_date(memory: Memory) -> None:
    _add_project(memory, "p")
    hits = memory.search(SearchRequest(user_id="p", query="When did we move hosting to Fly?", top_k=20))
    moved = next(h for h in hits if "moved hosting" in str(h.content))
    assert moved.metadata["dates"] == {"Yesterday": "2024-03-13"}
    assert '"Yesterday" = 2024-03-13' in str(moved.content)
    heroku = next(h for h in hits if "Heroku for hosting" in str(h.content))
    assert heroku.metadata["superseded_by"] == {"session_id": "switch", "date": "2024-03-14", "value": "fly"}


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


def test_relative_dates() -> None:
    thursday = _ms("2024-03-14T10:00:00Z")
    found = {r.phrase: r.label() for r in resolve(
        "Two days ago we met, last week was busy, we shipped last Friday and we ship next month.", thursday)}
    assert found == {"Two days ago": "2024-03-12", "last week": "2024-03-04 to 2024-03-10",
                     "last Friday": "2024-03-08", "next month": "2024-04-01 to 2024-04-30"}
    assert [r.label() for r in resolve("We deployed on Monday; the review is on Friday.", thursday)] == [
        "2024-03-11", "2024-03-15"]
    assert resolve("Nothing relative here.", thursday) == []


def test_facts_and_what_supersedes_them() -> None:
    assert facts("We switched from Alembic to Aerich for database migrations.") == [Fact("migration", "aerich", "alembic")]
    assert facts("Heads up: authentication now uses OAuth with Keycloak instead of JWT.") == [
        Fact("authentication", "oauth with keycloak", "jwt")]
    assert facts("Redis is gone, we're on Memcached for caching now.") == [Fact("caching", "memcached", "redis")]
    assert facts("We no longer use Redis.") == [Fact("", "", "redis")]
    assert facts("Are we still on Heroku?") == []
    assert facts("Caroline: I went to the support group yesterday and it was so powerful.") == []
    old = Fact("migration", "alembic")
    assert supersedes(Fact("migration", "aerich", "alembic"), old)
    assert supersedes(Fact("", "aerich", "alembic"), old)
    assert supersedes(Fact("migration", "aerich"), old)
    assert not supersedes(Fact("hosting", "fly"), old)
    assert not supersedes(Fact("migration", "alembic"), old)
