"""A memory's time is its source's time: a commit's date, a session's messages' timestamps.
Search items carry it as `created_at` (the storage time beside it in metadata), the browsing
list is ordered by it, and purging still goes by when rows were stored (codemem/times.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from cli.results import format_hit
from codemem.compact import compact
from codemem.contract.types import AddRequest, Hit, Message, SearchRequest
from codemem.importers.git import ingest_git
from codemem.memory import Memory
from codemem.times import MAX_MS, iso
from integrations import mcp_text
from tests.history import build_history

JAN_2024 = 1_704_067_200_000  # 2024-01-01T00:00:00Z
ISO_Z = "%Y-%m-%dT%H:%M:%S.%fZ"


def _iso_ms(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime(ISO_Z)[:-4] + "Z"


def _add(memory: Memory, request_id: str, session_id: str, messages: list[Message]) -> None:
    memory.add(AddRequest(request_id=request_id, user_id="u", session_id=session_id, messages=messages))


def _search(memory: Memory, query: str, user_id: str = "u") -> list[Hit]:
    return memory.search(SearchRequest(user_id=user_id, query=query, top_k=20))


def test_search_items_are_dated_at_their_messages_not_at_the_add(memory: Memory) -> None:
    _add(memory, "r1", "s1", [
        Message(role="user", content="QuerySet.filter(None) raises TypeError", timestamp=JAN_2024),
        Message(role="assistant", content="Fixed in django/db/models/query.py: guard None before the lookup.",
                timestamp=JAN_2024 + 60_000),
    ])
    _add(memory, "r2", "s1", [Message(role="user", content="Ran pytest tests/test_query.py: 3 passed",
                                      timestamp=JAN_2024 + 3_600_000)])
    hits = _search(memory, "TypeError when filtering with None")
    card = next(h for h in hits if h.metadata["kind"] == "card")
    # The card is as recent as the session's latest message, written as the contract's ISO.
    assert card.created_at == "2024-01-01T01:00:00.000Z"
    stored = datetime.strptime(str(card.metadata["stored_at"]), ISO_Z).replace(tzinfo=UTC)
    assert abs(datetime.now(UTC) - stored) < timedelta(minutes=5)  # when it was stored, kept beside it
    messages = {h.id: h.created_at for h in memory.experience("u", "s1") if h.metadata["kind"] == "message"}
    assert sorted(messages.values()) == [_iso_ms(JAN_2024), _iso_ms(JAN_2024 + 60_000),
                                         _iso_ms(JAN_2024 + 3_600_000)]


def test_without_timestamps_an_item_is_dated_when_stored(memory: Memory) -> None:
    before = datetime.now(UTC) - timedelta(seconds=5)
    _add(memory, "r1", "s1", [Message(role="user", content="Fix the crash in parsers/diff.py on empty hunks")])
    (card,) = [h for h in _search(memory, "crash in parsers diff empty hunks") if h.metadata["kind"] == "card"]
    assert datetime.strptime(card.created_at, ISO_Z).replace(tzinfo=UTC) >= before
    assert card.created_at == card.metadata["stored_at"]


def test_a_timestamp_past_what_a_date_holds_falls_back_and_nothing_fails(memory: Memory) -> None:
    far = 2**62  # a valid Add (any non-negative int64), no writable date
    _add(memory, "r1", "s1", [Message(role="user", content="Fix the crash in parsers/diff.py", timestamp=far)])
    hits = _search(memory, "crash in parsers diff")
    assert hits and all(h.created_at == h.metadata["stored_at"] for h in hits)
    assert "stored " in format_hit(1, hits[0])  # the CLI says it has no time of its own
    text = mcp_text.search_answer(compact(hits, 5, 1500, lambda _: ""), "u", 1500)
    assert 'stored="' in text and ' at="' not in text
    assert iso(MAX_MS) == "9999-12-31T23:59:59.999Z"


def test_an_imported_history_is_listed_and_dated_in_its_own_time_order(memory: Memory, tmp_path: Path) -> None:
    history = build_history(tmp_path / "flask")
    ingest_git(memory, str(history.path), "repo", progress=False)
    listed = memory.list_experiences("repo")
    years = [datetime.fromtimestamp(c.at / 1000, UTC).year for c in listed]
    assert years == [2023, 2021, 2021, 2015, 2012, 2010]  # newest first, not in the order stored
    assert listed[-1].metadata["subject"] == "Initial checkin"
    assert [c.session_id for c in listed[1:3]] == [f"git:{history.shas['merge']}", f"git:{history.shas['start21']}"]
    hits = _search(memory, "Document the config loader", "repo")
    docs = next(h for h in hits if h.session_id == f"git:{history.shas['docs']}" and h.metadata["kind"] == "card")
    assert docs.created_at == "2015-03-14T15:09:26.000Z"  # the commit's date, not the import's minute
    assert all(h.created_at == "2015-03-14T15:09:26.000Z" for h in hits if h.session_id == docs.session_id)


def test_purging_goes_by_when_rows_were_stored_not_by_their_source_time(memory: Memory, tmp_path: Path) -> None:
    history = build_history(tmp_path / "flask")
    ingest_git(memory, str(history.path), "repo", progress=False)
    assert memory.purge(timedelta(days=30)) == 0  # a 2010 commit imported today is kept
    assert len(memory.list_experiences("repo")) == 6
    assert memory.purge(timedelta(seconds=-60)) > 0  # everything stored before "a minute from now"
    assert memory.list_experiences("repo") == []
