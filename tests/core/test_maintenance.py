"""Session history cache and compaction: the pieces that keep Adds fast as a table grows.

Every test runs on a real LanceDB store in a temporary directory (milliseconds): what they
guard is storage behaviour. Only a failure that cannot be provoked on demand is faked.
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest

from codemem.config import Maintenance
from codemem.contract.types import Message
from codemem.store import lance as store_lance
from codemem.store.lance import Store
from codemem.store.locks import Locks, ProcessLock
from codemem.store.maintenance import KEEP_VERSIONS_FOR, Compactor
from codemem.store.schema import Row
from codemem.writing.session_state import MessageCache

USER, SESSION = "u" * 32, "s" * 32


def _message_rows(texts: list[str], session_key: str = SESSION, request: str = "r") -> list[Row]:
    """One Add's message rows, in the order given."""
    return [
        Row(id=f"m_{session_key[:8]}_{request}_{i}", user_key=USER, user_id="u", session_key=session_key,
            session_id=session_key, request_key=request.rjust(32, "0"), kind="message", position=i, role="user",
            text=text, refs="", content="", metadata="{}", created_at=0, timestamp=None)
        for i, text in enumerate(texts)
    ]


def _loose_store(tmp_path: Path, commits: int, rows_each: int) -> Store:
    """A real store left as a bulk import leaves it: one fragment per commit, none indexed."""
    store = Store(str(tmp_path / "data"), "test-model", 4)
    for c in range(commits):
        store.append([
            Row(id=f"m_{c}_{i}", user_key="u" * 32, user_id="u", session_key="s" * 32, session_id="s",
                request_key=f"{c:032d}", kind="message", position=i, role="user", text=f"module_{c}_{i} failed",
                refs="", content="", metadata="{}", created_at=0, timestamp=None)
            for i in range(rows_each)
        ])
    return store


def _counting_reads(store: Store, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The session keys of every history read from `store` (the real read runs)."""
    reads: list[str] = []
    real = store.session_rows

    def session_rows(session_key: str, *args: object, **kwargs: object) -> list[dict[str, object]]:
        reads.append(session_key)
        return real(session_key, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "session_rows", session_rows)
    return reads


def msgs(n: int, start: int = 0) -> list[Message]:
    return [Message("user", f"message {i}") for i in range(start, start + n)]


def test_history_is_served_from_memory_only_when_the_store_agrees(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache answers while it holds as many messages as the store says the session has;
    when the store holds more (another process added to the session), they are read back
    from the store, in arrival order."""
    store = Store(str(tmp_path / "data"), "test-model", 4)
    store.append(_message_rows([m.text for m in msgs(3)], request="r1"))
    reads = _counting_reads(store, monkeypatch)
    cache = MessageCache()
    cache.put(SESSION, msgs(3))
    assert [m.text for m in cache.messages(store, USER, SESSION, stored=3)] == [m.text for m in msgs(3)]
    assert reads == []
    store.append(_message_rows([m.text for m in msgs(2, start=3)], request="r2"))  # written elsewhere
    assert [m.text for m in cache.messages(store, USER, SESSION, stored=5)] == [m.text for m in msgs(5)]
    assert reads == [SESSION]


def test_history_cache_is_bounded_by_characters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past its character bound the cache drops its least recent session, and keeps none
    larger than the bound (nor drops others for it): what it dropped is read from the store."""
    store = Store(str(tmp_path / "data"), "test-model", 4)
    texts = {"a" * 32: "x" * 60, "b" * 32: "y" * 60, "c" * 32: "z" * 500}
    for session_key, text in texts.items():
        store.append(_message_rows([text], session_key=session_key))
    reads = _counting_reads(store, monkeypatch)
    a, b, c = texts
    cache = MessageCache(max_chars=100)
    cache.put(a, [Message("user", texts[a])])
    cache.put(b, [Message("user", texts[b])])  # pushes "a" out
    assert cache.messages(store, USER, a, stored=1)[0].text == texts[a]
    assert cache.messages(store, USER, b, stored=1)[0].text == texts[b]
    assert reads == [a]
    cache.put(c, [Message("user", texts[c])])  # larger than the whole cache: not kept, nor pushing "b" out
    assert cache.messages(store, USER, c, stored=1)[0].text == texts[c]
    assert cache.messages(store, USER, b, stored=1)[0].text == texts[b]
    assert reads == [a, c]


def test_compaction_after_a_conflict_holds_the_write_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A round refused as a conflict is counted, and the next round holds the write lock
    throughout, so it lands and compacts the store; the round after that runs beside the
    writes again."""
    store = _loose_store(tmp_path, commits=4, rows_each=10)
    compactor = Compactor(store, Maintenance(interval_s=0, min_writes=1))
    held_lock: list[bool] = []  # each round's `exclusive`
    real_optimize = store.optimize

    # A fake failure on a real store: a conflict cannot be made to happen on demand (it needs
    # an upsert to land inside a round's rewrite), so the first round fails as one would.
    def optimize(keep: timedelta, exclusive: bool = False) -> None:
        held_lock.append(exclusive)
        if len(held_lock) == 1:
            raise RuntimeError("Retryable commit conflict")
        real_optimize(keep, exclusive=exclusive)

    monkeypatch.setattr(store, "optimize", optimize)
    compactor.run_once()
    assert compactor.failures == 1 and compactor.runs == 0 and compactor.last_error == "RuntimeError"
    assert store.stats()["small_fragments"] == 4  # nothing was compacted
    compactor.run_once()
    assert compactor.runs == 1 and compactor.last_error is None
    after = store.stats()
    assert after["small_fragments"] == 1 and after["unindexed_rows"] == 0
    assert store.count() == 40 and store.fts("module_3_7", USER, 5)[0].id == "m_3_7"
    # The first round ran alongside writes; the retry excluded them.
    assert held_lock == [False, True]
    compactor.run_once()
    assert held_lock[-1] is False


def test_compaction_counts_commits_of_every_process_and_skips_while_another_compacts(tmp_path: Path) -> None:
    """Pending work is the table's commits since the last compaction by any process; a round
    is skipped while another process holds the compaction lock, and a compaction by another
    process leaves nothing pending here either."""
    store = Store(str(tmp_path / "data"), "test-model", 4)
    compactor = Compactor(store, Maintenance(interval_s=0, min_writes=1))

    def commit(n: int, on: Store = store) -> None:
        for _ in range(n):
            on.append(_message_rows(["more"], request=f"x{on.count()}"))

    assert compactor.pending() == 0
    commit(5)
    assert compactor.pending() == 5
    assert compactor.run_once() is True
    assert compactor.pending() == 0  # the compaction's own versions are not pending work
    # Another process holds the compaction lock (its own open file: flock is per open file).
    other = ProcessLock(tmp_path / "data" / ".codemem-locks" / "compaction.lock")
    assert other.acquire(blocking=False)
    commit(2)
    assert compactor.run_once() is False and compactor.pending() == 2
    other.release()
    assert compactor.run_once() is True
    # Another process, with its own handle on the directory: its commits are pending here,
    # and once it compacted them, they are not.
    elsewhere_store = Store(str(tmp_path / "data"), "test-model", 4)
    elsewhere = Compactor(elsewhere_store, Maintenance(interval_s=0, min_writes=1))
    commit(4, on=elsewhere_store)
    assert compactor.pending() == 4
    assert elsewhere.run_once() is True
    assert compactor.pending() == 0
    assert store.count() == 11


def test_process_locks_exclude_other_open_files_of_the_same_path(tmp_path: Path) -> None:
    first, second = Locks(str(tmp_path)), Locks(str(tmp_path))  # as two processes hold them
    key, other_key = "0" * 32, "1" * 32
    with first.session(key):
        assert second.session(key).acquire(blocking=False) is False
        assert second.session(other_key).acquire(blocking=False) is True  # another stripe
        second.session(other_key).release()
    assert second.session(key).acquire(blocking=False) is True
    second.session(key).release()


def test_object_storage_locks_are_this_process_only(tmp_path: Path) -> None:
    locks = Locks("s3://bucket/prefix")
    with locks.write:
        assert locks.write.locked()
    assert not (Path.cwd() / "s3:").exists()


def test_a_store_left_uncompacted_is_compacted_at_start_up_in_the_background(tmp_path: Path) -> None:
    _loose_store(tmp_path, commits=20, rows_each=40)
    store = Store(str(tmp_path / "data"), "test-model", 4)  # a restart: no commit after it
    before = store.stats()
    assert before["small_fragments"] >= 20 and before["unindexed_rows"] == 800
    compactor = Compactor(store, Maintenance(interval_s=0.05, min_writes=50))
    compactor.start()
    try:
        deadline = time.monotonic() + 60
        while compactor.runs == 0 and time.monotonic() < deadline:
            # Searches answer while it runs.
            assert store.fts("module_3_1", "u" * 32, 5)
            time.sleep(0.05)
    finally:
        compactor.stop()
    after = store.stats()
    assert compactor.runs >= 1
    assert after["small_fragments"] <= 1 and after["unindexed_rows"] == 0


def test_a_store_within_bounds_is_left_alone_until_commits_pile_up(tmp_path: Path) -> None:
    store = _loose_store(tmp_path, commits=3, rows_each=10)
    compactor = Compactor(store, Maintenance(interval_s=0, min_writes=50, max_small_fragments=8, max_unindexed_rows=500))
    assert not compactor.due(pending=0, quiet=True, first=True)  # 3 fragments, 30 rows: fine
    assert not compactor.due(pending=2, quiet=False, first=False)
    assert compactor.due(pending=2, quiet=True, first=False)  # writes went quiet
    tight = Compactor(store, Maintenance(interval_s=0, min_writes=50, max_small_fragments=2, max_unindexed_rows=500))
    assert tight.due(pending=0, quiet=False, first=True)  # past a bound at start-up
    assert tight.due(pending=1, quiet=False, first=False)  # past a bound after a commit
    assert not tight.due(pending=0, quiet=True, first=False)  # nothing new since: no busy loop


def test_a_failed_round_is_retried_without_a_new_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = _loose_store(tmp_path, commits=3, rows_each=10)
    compactor = Compactor(store, Maintenance(interval_s=0, min_writes=50, max_small_fragments=2, max_unindexed_rows=500))
    real_optimize = store.optimize

    def conflicting(*args: object, **kwargs: object) -> None:  # faked: a real one cannot be had on demand
        raise RuntimeError("Retryable commit conflict")

    monkeypatch.setattr(store, "optimize", conflicting)
    assert compactor.run_once() and compactor.last_error == "RuntimeError"
    # No write since the failed round, yet the store is still past its bounds: try again.
    assert compactor.due(pending=compactor.pending(), quiet=True, first=False)
    monkeypatch.setattr(store, "optimize", real_optimize)
    assert compactor.run_once() and compactor.last_error is None
    assert not compactor.due(pending=compactor.pending(), quiet=True, first=False)


def test_compaction_rewrites_only_the_small_tail_and_keeps_index_segments_few(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A round must not rewrite the table's large fragments (at 20k rows LanceDB's own
    optimize rewrote all 43 MB each round), nor let the full-text indexes split into
    ever more segments; every row stays findable through the rounds."""
    monkeypatch.setattr(store_lance, "COMPACT_TARGET_ROWS", 50)
    store = _loose_store(tmp_path, commits=1, rows_each=60)  # one fragment past the target
    store.optimize(timedelta(0))
    data = tmp_path / "data" / "items.lance" / "data"
    large = set(data.iterdir())
    most = 0
    for c in range(1, 2 * store_lance.MAX_INDEX_SEGMENTS + 2):
        for part in range(2):
            store.append([
                Row(id=f"m_{c}_{part}", user_key="u" * 32, user_id="u", session_key="s" * 32, session_id="s",
                    request_key=f"{c:031d}{part}", kind="message", position=0, role="user",
                    text=f"word{c}x{part} failed", refs="", content="", metadata="{}", created_at=0,
                    timestamp=None)
            ])
        store.optimize(timedelta(0))
        assert large <= set(data.iterdir())  # the large fragment's file is still the one written first
        segments = {index.name: len(index.segments) for index in store.table.to_lance().describe_indices()}
        most = max(most, *(segments[name] for name in store_lance.FTS_INDEXES))
        assert most <= store_lance.MAX_INDEX_SEGMENTS
        assert store.stats()["unindexed_rows"] == 0
        for seen in range(1, c + 1):
            assert store.fts(f"word{seen}x1", "u" * 32, 5)[0].id == f"m_{seen}_1"
    assert most > 1  # new rows went into a segment of their own, the index was not rewritten
    assert store.fts("module_0_7", "u" * 32, 5)[0].id == "m_0_7"
    assert store.count() == 60 + 2 * (2 * store_lance.MAX_INDEX_SEGMENTS + 1)


def test_compaction_lands_while_upserts_touch_the_fragments_it_rewrites(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under a steady stream of Adds each session's card is replaced in place, in the small
    fragments a round rewrites: the rewrite holds the write lock, so an upsert that comes
    meanwhile waits and lands after it, no round is refused as a conflict (half of them were
    under mixed load), and every row and every update stays.

    Every round meets such an upsert, by construction rather than by the luck of thread
    timing: once the round has read the table it rewrites, a writer starts an upsert of
    every card (holding the write lock, as GroupWriter commits). When the round holds the
    lock, the upsert waits for it whenever it gets there; when nothing holds it, the round
    goes on only once the upsert has landed, so it rewrites fragments the upsert changed and
    its commit is refused. No wait in it is a guess at how long a thread takes."""
    rounds = 8
    store = _loose_store(tmp_path, commits=12, rows_each=5)

    def card(c: int, version: int) -> Row:
        return Row(id=f"c_{c}", user_key=USER, user_id="u", session_key=f"{c:032d}", session_id=str(c),
                   request_key="", kind="card", position=0, role="", text=f"card {c} version {version}",
                   refs="", content="", metadata="{}", created_at=0, timestamp=None)

    store.append([card(c, 0) for c in range(6)])

    def write(version: int, upserted: threading.Event) -> None:
        with store.write_lock:
            store.upsert([card(c, version) for c in range(6)])
        upserted.set()
        with store.write_lock:
            store.append(_message_rows(["more"], request=f"x{version}"))

    writers: list[threading.Thread] = []
    real_to_lance = store.table.to_lance

    def to_lance() -> object:  # what a round rewrites, read (only rounds read it here)
        dataset = real_to_lance()
        # The last round's writer has ended, so whoever holds the write lock now is the round.
        round_holds_lock = store.write_lock.locked()
        upserted = threading.Event()
        writers.append(threading.Thread(target=write, args=(len(writers) + 1, upserted)))
        writers[-1].start()
        if not round_holds_lock:  # the upsert lands inside the rewrite
            assert upserted.wait(60), "an upsert waited for a write lock that nothing held"
        return dataset

    monkeypatch.setattr(store.table, "to_lance", to_lance)
    try:
        for _ in range(rounds):
            # Old versions are kept, as the compactor keeps them: a version a writer's handle
            # is checking out must not be cleaned up under it.
            store.optimize(KEEP_VERSIONS_FOR)  # raises on a refused commit
            writers[-1].join(timeout=60)
            assert not writers[-1].is_alive()
    finally:
        monkeypatch.undo()
        for writer in writers:
            writer.join(timeout=60)
    assert len(writers) == rounds
    cards = store.rows("kind = 'card'", ["text"])
    assert sorted(str(r["text"]) for r in cards) == [f"card {c} version {rounds}" for c in range(6)]
    assert store.count("kind = 'message'") == 60 + rounds


def test_rows_that_land_during_a_round_are_indexed_by_a_round_after_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A round's index work runs beside the writes: an Add that commits while it runs is in
    the version the round ends at but not in its indexes. The compactor must not take those
    rows as compacted: once writes go quiet it runs again, and stops once nothing is left."""
    store = _loose_store(tmp_path, commits=3, rows_each=10)
    compactor = Compactor(store, Maintenance(interval_s=0, min_writes=50))
    real_optimize = store.optimize

    def overtaken(keep: timedelta, exclusive: bool = False) -> None:
        real_optimize(keep, exclusive=exclusive)
        store.append(_message_rows(["landed mid-round"], request="late"))  # after the round's index snapshot

    monkeypatch.setattr(store, "optimize", overtaken)
    assert compactor.run_once()
    monkeypatch.setattr(store, "optimize", real_optimize)
    assert compactor.pending() == 0 and store.stats()["unindexed_rows"] == 1
    assert compactor.due(pending=0, quiet=True, first=False)
    assert compactor.run_once()
    assert store.stats()["unindexed_rows"] == 0
    assert store.fts("landed", USER, 5)[0].id.startswith("m_")
    assert not compactor.due(pending=compactor.pending(), quiet=True, first=False)  # no busy loop
