"""An Add reads its session's state from memory while no other process wrote the session
(`session_state.StateCache`), and from the store whenever one did, deleted it, or this process
restarted or failed a write."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from codemem.config import Settings
from codemem.contract.types import AddRequest, Message
from codemem.encoders import ShippedEmbedder
from codemem.memory import Memory
from codemem.store.locks import Locks
from codemem.store.schema import key_of

USER, SESSION = "u", "s"


def _add(memory: Memory, request_id: str, text: str, session_id: str = SESSION) -> bool:
    """Add one message; True when it was stored (not a duplicate)."""
    req = AddRequest(request_id=request_id, user_id=USER, session_id=session_id,
                     messages=[Message(role="user" if request_id.endswith("1") else "assistant", content=text)])
    return not memory.add(req).duplicate


def _stored(memory: Memory, session_id: str = SESSION) -> tuple[int, int]:
    """(messages stored, messages the stored card was built from), read from the store."""
    key = key_of(USER, session_id)
    messages = memory.store.session_rows(key, ["message"], columns=["id"])
    cards = memory.store.session_rows(key, ["card"], columns=["metadata"])
    built = msgspec.json.decode(cards[0]["metadata"])["messages"] if cards else 0
    return len(messages), built


@pytest.fixture
def data_dir(tmp_path: Path) -> str:
    return str(tmp_path / "data")


@pytest.fixture
def pair(data_dir: str, embedder: ShippedEmbedder) -> Iterator[tuple[Memory, Memory]]:
    """Two Memories on one data directory, as two worker processes."""
    settings = Settings().replace({"storage.data_dir": data_dir, "maintenance.interval_s": 0})
    a, b = Memory(settings, embedder=embedder), Memory(settings, embedder=embedder)
    yield a, b
    a.close()
    b.close()


class _Reads:
    """Counts the store's read queries."""

    def __init__(self, memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
        self.n = 0
        for name in ("rows", "count", "exists"):
            method = getattr(memory.store, name)
            monkeypatch.setattr(memory.store, name, self._counted(method))

    def _counted(self, method):  # type: ignore[no-untyped-def]
        def call(*a, **k):  # type: ignore[no-untyped-def]
            self.n += 1
            return method(*a, **k)
        return call


def test_an_add_to_a_session_this_process_wrote_reads_nothing_first(
        memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _add(memory, "r1", "Fix the parser crash on empty input in parse_args")
    reads = _Reads(memory, monkeypatch)
    assert _add(memory, "r2", "Edited parse_args to return early; tests pass now")
    assert not _add(memory, "r1", "Fix the parser crash on empty input in parse_args")  # a retry
    assert reads.n == 0
    monkeypatch.undo()
    assert _stored(memory) == (2, 2)


def test_a_write_by_another_process_is_read_back(pair: tuple[Memory, Memory]) -> None:
    a, b = pair
    assert _add(a, "r1", "Fix the parser crash on empty input in parse_args")
    assert _add(b, "r2", "Edited parse_args to return early")
    assert not _add(a, "r2", "Edited parse_args to return early")  # b's copy, seen by a
    assert _add(a, "r3", "tests pass now")
    assert _stored(a) == (3, 3)  # a's card is built from b's message too


def test_a_session_in_another_stripe_stays_held_when_another_process_writes(
        pair: tuple[Memory, Memory], monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = pair
    locks = a.store.locks
    other = next(f"t{i}" for i in range(1000)
                 if locks.stripe(key_of(USER, f"t{i}")) != locks.stripe(key_of(USER, SESSION)))
    assert _add(a, "r1", "Fix the parser crash on empty input")
    assert _add(b, "x1", "another session's task", session_id=other)
    reads = _Reads(a, monkeypatch)
    assert _add(a, "r2", "Edited parse_args")
    assert reads.n == 0


@pytest.mark.parametrize("how", ["user", "experience", "purge"])
def test_a_delete_by_another_process_is_not_undone_by_a_later_add(
        pair: tuple[Memory, Memory], how: str) -> None:
    from datetime import timedelta

    a, b = pair
    assert _add(a, "r1", "the secret task text")
    assert _add(a, "r2", "more of the secret session")
    if how == "user":
        b.delete_user(USER)
    elif how == "experience":
        b.delete_experience(USER, SESSION)
    else:
        b.purge(timedelta(0))
    assert _add(a, "r1", "a new start")  # stored again: the first copy is gone
    assert _stored(a) == (1, 1)
    card = a.store.session_rows(key_of(USER, SESSION), ["card"], columns=["text"])[0]
    assert "secret" not in card["text"]


def test_what_is_read_while_another_process_deletes_is_not_kept_if_that_process_dies(
        pair: tuple[Memory, Memory]) -> None:
    a, b = pair
    assert _add(a, "r1", "the first task text")
    deletes = b.store.locks.deletes
    deletes.acquire()  # b's delete of the user starts ...
    deletes.bump()
    assert a.store.locks.deletes.held()
    assert _add(a, "r2", "read and written while the delete runs")
    b.store.delete_user(key_of(USER))  # ... commits, and b dies before it could say so again
    deletes.release()
    assert not a.store.locks.deletes.held()
    assert _add(a, "r1", "a new start")  # not taken for a duplicate of the deleted first copy
    assert _stored(a) == (1, 1)


def test_a_lock_held_by_a_thread_or_another_process_is_seen_as_held(tmp_path: Path) -> None:
    import threading

    one, two = Locks(str(tmp_path)), Locks(str(tmp_path))
    assert not one.deletes.held() and not two.deletes.held()
    with one.deletes:
        assert one.deletes.held() and two.deletes.held()
    taken, done = threading.Event(), threading.Event()

    def hold() -> None:
        with two.deletes:
            taken.set()
            done.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    taken.wait(10)
    assert two.deletes.held() and one.deletes.held()
    done.set()
    thread.join()
    assert not one.deletes.held() and not two.deletes.held()
    assert not Locks("s3://bucket/prefix").deletes.held()


def test_a_restarted_process_reads_what_it_wrote_before(data_dir: str, embedder: ShippedEmbedder) -> None:
    settings = Settings().replace({"storage.data_dir": data_dir, "maintenance.interval_s": 0})
    with Memory(settings, embedder=embedder) as first:
        assert _add(first, "r1", "Fix the parser crash on empty input")
    with Memory(settings, embedder=embedder) as second:
        assert not _add(second, "r1", "Fix the parser crash on empty input")
        assert _add(second, "r2", "tests pass now")
        assert _stored(second) == (2, 2)


def test_a_failed_write_keeps_nothing_of_it(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _add(memory, "r1", "Fix the parser crash on empty input")

    def fail(op: object) -> None:
        raise OSError("disk full")

    with monkeypatch.context() as m:
        m.setattr(memory.writer, "write", fail)
        with pytest.raises(OSError):
            _add(memory, "r2", "Edited parse_args")
    assert _add(memory, "r2", "Edited parse_args")  # not taken for a duplicate
    assert _stored(memory) == (2, 2)


def test_one_request_id_in_two_sessions_is_two_requests(memory: Memory) -> None:
    assert _add(memory, "r1", "first session's task", session_id="s1")
    assert _add(memory, "r1", "second session's task", session_id="s2")
    assert _stored(memory, "s1") == (1, 1) and _stored(memory, "s2") == (1, 1)


def test_lock_generations_are_shared_through_the_lock_files(tmp_path: Path) -> None:
    one, two = Locks(str(tmp_path)), Locks(str(tmp_path))
    lock = one.session("ab" * 16)
    with lock:
        assert lock.generation() == 0
        assert lock.bump() == 1
    with two.session("ab" * 16) as other:
        assert other.generation() == 1
    assert Locks("s3://bucket/prefix").session("ab" * 16).generation() is None


def test_a_session_is_refreshed_once_quiet_for_its_own_pace() -> None:
    from codemem.writing.session_refresher import SessionRefresher

    now = [100.0]
    done: list[tuple[str, str]] = []
    refresher = SessionRefresher(lambda u, s: done.append((u, s)), quiet_s=2.0, max_quiet_s=30.0,
                                 clock=lambda: now[0])
    try:
        refresher.mark("u", "once")
        refresher.mark("u", "paced")
        now[0] += 5
        refresher.mark("u", "paced")  # Adds 5 s apart: quiet after 10 s
        refresher.flush(only_due=True)
        assert done == [("u", "once")]
        now[0] += 9
        refresher.flush(only_due=True)
        assert done == [("u", "once")]
        now[0] += 1
        refresher.flush(only_due=True)
        assert done == [("u", "once"), ("u", "paced")]
        refresher.mark("u", "back")
        now[0] += 100
        refresher.mark("u", "back")  # back after a long silence: quiet after quiet_s again
        now[0] += 2
        refresher.flush(only_due=True)
        assert done[-1] == ("u", "back")
    finally:
        refresher.close()


def test_what_is_kept_of_a_quiet_session_expires() -> None:
    from codemem.writing.session_state import MessageCache, SessionState, StateCache

    now = [0.0]
    messages = MessageCache(max_chars=1000, max_idle_s=20, clock=lambda: now[0])
    messages.put("quiet", [Message("user", "x" * 100)])
    now[0] = 15.0
    messages.put("busy", [Message("user", "y" * 100)])
    now[0] = 25.0
    assert messages.expire() == 1 and messages.chars == 100
    now[0] = 40.0
    assert messages.expire() == 1 and messages.chars == 0

    class NoFiles:  # a store with lock files that never changes generation
        def stripe(self, key: str) -> int:
            return 0

        def session(self, key: str) -> NoFiles:
            return self

        def generation(self) -> int:
            return 1

        def held(self) -> bool:
            return False

        @property
        def deletes(self) -> NoFiles:
            return self

    states = StateCache(NoFiles(), max_idle_s=20, clock=lambda: now[0])  # type: ignore[arg-type]
    assert states.get("s") is None  # learns the stripe's generation
    states.put("s", SessionState(messages=1, derived=[]))
    now[0] = 55.0
    assert states.get("s") is not None  # used: its quiet time starts again
    now[0] = 70.0
    assert states.expire() == 0 and len(states) == 1
    now[0] = 76.0
    assert states.expire() == 1 and states.get("s") is None
