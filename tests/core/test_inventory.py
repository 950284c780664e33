"""Browsing a memory (codemem/store/inventory.py through Memory): users' figures, one experience
whole, and deleting one experience without touching the rest."""

from __future__ import annotations

import pytest

from codemem.contract.types import AddRequest, Message, SearchRequest
from codemem.errors import NotFound
from codemem.memory import Memory


def _add(memory: Memory, user_id: str, session_id: str, *texts: str) -> None:
    messages = [Message(role="user" if i % 2 == 0 else "assistant", content=t, timestamp=1_704_067_200_000 + i)
                for i, t in enumerate(texts)]
    memory.add(AddRequest(request_id=f"{user_id}-{session_id}", user_id=user_id, session_id=session_id,
                          messages=messages))


@pytest.fixture
def filled(memory: Memory) -> Memory:
    _add(memory, "alice", "s1", "fix the flaky scheduler test", "Edited scheduler.py; tests pass")
    _add(memory, "alice", "s2", "speed up the csv export", "Used a generator in export.py", "done")
    _add(memory, "bob", "s1", "bob's own task", "bob's answer")
    return memory


def test_list_users_counts_each_users_experiences_messages_and_bytes(filled: Memory) -> None:
    users = {u.user_id: u for u in filled.list_users()}
    assert set(users) == {"alice", "bob"}
    alice, bob = users["alice"], users["bob"]
    assert (alice.experiences, alice.messages, bob.experiences, bob.messages) == (2, 5, 1, 2)
    assert alice.items + bob.items == filled.store.count()
    # Text alone is a lower bound on what is stored; the card's 384-d vector adds 1536 bytes each.
    assert alice.stored_bytes > len("fix the flaky scheduler test") + 2 * 1536
    assert alice.last_write_ms >= bob.last_write_ms - 60_000 and alice.last_write_ms > 0


def test_experience_record_is_whole_and_of_its_user_only(filled: Memory) -> None:
    record = filled.experience_record("alice", "s2", with_messages=True)
    assert record.card.kind == "card" and "csv export" in record.card.text
    assert [m.text for m in record.messages] == ["speed up the csv export", "Used a generator in export.py", "done"]
    assert filled.experience_record("alice", "s2").messages == []
    assert {c.session_id for c in filled.list_experiences("alice")} == {"s1", "s2"}
    assert "bob's own task" not in filled.experience_record("alice", "s1").card.text
    with pytest.raises(NotFound):
        filled.experience_record("alice", "no-such-session")


def test_delete_experience_removes_one_session_and_nothing_else(filled: Memory) -> None:
    removed = filled.delete_experience("alice", "s1")
    assert removed == 3  # two messages and the card
    with pytest.raises(NotFound):
        filled.experience_record("alice", "s1")
    # A deferred rebuild arriving afterwards does not bring the card back.
    filled.refresh_session("alice", "s1")
    assert [c.session_id for c in filled.list_experiences("alice")] == ["s2"]
    assert filled.experience_record("bob", "s1").card.text  # bob's s1 is another session
    hits = filled.search(SearchRequest(user_id="alice", query="flaky scheduler test", top_k=5))
    assert all(h.session_id != "s1" for h in hits)
    assert filled.delete_experience("alice", "s1") == 0


def test_storage_is_measured_again_once_the_store_changed_and_the_measure_aged(filled: Memory) -> None:
    before = {u.user_id: u.stored_bytes for u in filled.list_users()}
    _add(filled, "alice", "s3", "a third task " * 50, "and its answer")
    fresh = {u.user_id: u for u in filled.list_users()}
    assert fresh["alice"].messages == 7  # counts are read fresh
    assert fresh["alice"].stored_bytes == before["alice"]  # storage waits for max_age_s
    _add(filled, "carol", "s1", "a new user", "is measured at once")
    assert {u.user_id: u.stored_bytes for u in filled.list_users()}["carol"] > 0
    filled.inventory.max_age_s = 0
    _add(filled, "alice", "s4", "a fourth task", "done")
    assert {u.user_id: u.stored_bytes for u in filled.list_users()}["alice"] > before["alice"] + 600
