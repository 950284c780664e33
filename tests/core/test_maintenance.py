"""Session history cache and compaction: the pieces that keep Adds fast as a table grows."""

import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest

from codemem.models import Message
from codemem.sessions import MessageCache
from codemem.store import lance as store_lance
from codemem.store.lance import Store
from codemem.store.locks import Locks, ProcessLock
from codemem.store.maintenance import Bounds, Compactor
from codemem.store.schema import Row


class FakeStore:
    """Answers what MessageCache and Compactor ask of a store, and records it."""

    def __init__(self, stored: list[Message], fail_times: int = 0, data_dir: Path | None = None) -> None:
        self.stored = stored
        self.reads = 0
        self.locks = Locks(str(data_dir or "memory://"))
        self.write_lock = self.locks.write
        self.fail_times = fail_times
        self.optimized_holding_lock: list[bool] = []
        self.versions = 1

    def version(self) -> int:
        return self.versions

    def session_rows(self, session_key: str, kinds: list[str], columns: list[str],
                     user_key: str | None = None) -> list[dict[str, object]]:
        self.reads += 1
        return [
            {"role": m.role, "text": m.text, "content": "", "timestamp": None, "created_at": 0,
             "request_key": "r", "position": i}
            for i, m in enumerate(self.stored)
        ]

    def optimize(self, keep: timedelta, exclusive: bool = False) -> None:
        self.optimized_holding_lock.append(exclusive)
        self.versions += 3
        if self.fail_times:
            self.fail_times -= 1
            raise RuntimeError("Retryable commit conflict")


def msgs(n: int, start: int = 0) -> list[Message]:
    return [Message("user", f"message {i}") for i in range(start, start + n)]


def test_history_is_served_from_memory_only_when_the_store_agrees() -> None:
    store = FakeStore(msgs(3))
    cache = MessageCache()
    cache.put("s", msgs(3))
    assert [m.text for m in cache.messages(store, "u", "s", stored=3)] == [m.text for m in msgs(3)]
    assert store.reads == 0
    # The store holds a different number (a failed write, another process): read it back.
    store.stored = msgs(5)
    assert len(cache.messages(store, "u", "s", stored=5)) == 5
    assert store.reads == 1


def test_history_cache_is_bounded_by_characters() -> None:
    cache = MessageCache(max_chars=100)
    cache.put("a", [Message("user", "x" * 60)])
    cache.put("b", [Message("user", "y" * 60)])  # pushes "a" out
    store = FakeStore([Message("user", "from store")])
    assert cache.messages(store, "u", "a", stored=1)[0].text == "from store"
    assert cache.messages(store, "u", "b", stored=1)[0].text == "y" * 60
    cache.put("c", [Message("user", "z" * 500)])  # larger than the whole cache: not kept
    assert cache.messages(store, "u", "c", stored=1)[0].text == "from store"


def test_compaction_after_a_conflict_holds_the_write_lock() -> None:
    store = FakeStore([], fail_times=1)
    compactor = Compactor(store, interval_s=0, min_writes=1)  # type: ignore[arg-type]
    compactor.run_once()
    assert compactor.failures == 1 and compactor.runs == 0
    compactor.run_once()
    assert compactor.runs == 1
    # The first round ran alongside writes; the retry excluded them.
    assert store.optimized_holding_lock == [False, True]
    compactor.run_once()
    assert store.optimized_holding_lock[-1] is False


def test_compaction_counts_commits_of_every_process_and_skips_while_another_compacts(tmp_path: Path) -> None:
    store = FakeStore([], data_dir=tmp_path)
    compactor = Compactor(store, interval_s=0, min_writes=1)  # type: ignore[arg-type]
    assert compactor.pending() == 0
    store.versions += 5  # commits, whoever made them
    assert compactor.pending() == 5
    assert compactor.run_once() is True
    assert compactor.pending() == 0  # the compaction's own versions are not pending work
    # Another process holds the compaction lock (its own open file: flock is per open file).
    other = ProcessLock(tmp_path / ".codemem-locks" / "compaction.lock")
    assert other.acquire(blocking=False)
    store.versions += 2
    assert compactor.run_once() is False and compactor.pending() == 2
    other.release()
    assert compactor.run_once() is True
    # A compaction by another process counts for this one too: those commits are compacted.
    elsewhere = Compactor(store, interval_s=0, min_writes=1)  # type: ignore[arg-type]
    store.versions += 4
    assert elsewhere.run_once() is True
    assert compactor.pending() == 0


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


def test_a_store_left_uncompacted_is_compacted_at_start_up_in_the_background(tmp_path: Path) -> None:
    _loose_store(tmp_path, commits=20, rows_each=40)
    store = Store(str(tmp_path / "data"), "test-model", 4)  # a restart: no commit after it
    before = store.stats()
    assert before["small_fragments"] >= 20 and before["unindexed_rows"] == 800
    compactor = Compactor(store, interval_s=0.05, min_writes=50)
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
    compactor = Compactor(store, interval_s=0, min_writes=50, bounds=Bounds(small_fragments=8, unindexed_rows=500))
    assert not compactor.due(pending=0, quiet=True, first=True)  # 3 fragments, 30 rows: fine
    assert not compactor.due(pending=2, quiet=False, first=False)
    assert compactor.due(pending=2, quiet=True, first=False)  # writes went quiet
    tight = Compactor(store, interval_s=0, min_writes=50, bounds=Bounds(small_fragments=2, unindexed_rows=500))
    assert tight.due(pending=0, quiet=False, first=True)  # past a bound at start-up
    assert tight.due(pending=1, quiet=False, first=False)  # past a bound after a commit
    assert not tight.due(pending=0, quiet=True, first=False)  # nothing new since: no busy loop


def test_a_failed_round_is_retried_without_a_new_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = _loose_store(tmp_path, commits=3, rows_each=10)
    compactor = Compactor(store, interval_s=0, min_writes=50, bounds=Bounds(small_fragments=2, unindexed_rows=500))
    real_optimize = store.optimize

    def conflicting(*args: object, **kwargs: object) -> None:
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


def test_compaction_lands_while_upserts_touch_the_fragments_it_rewrites(tmp_path: Path) -> None:
    """Under a steady stream of Adds each session's card is replaced in place, in the small
    fragments a round rewrites: the rewrite holds the write lock, so no round is refused
    as a conflict (half of them were under mixed load) and every row stays."""
    store = _loose_store(tmp_path, commits=12, rows_each=5)

    def card(c: int, version: int) -> Row:
        return Row(id=f"c_{c}", user_key="u" * 32, user_id="u", session_key=f"{c:032d}", session_id=str(c),
                   request_key="", kind="card", position=0, role="", text=f"card {c} version {version}",
                   refs="", content="", metadata="{}", created_at=0, timestamp=None)

    store.append([card(c, 0) for c in range(6)])
    stop = threading.Event()
    upserts = 0

    def writer() -> None:  # as GroupWriter commits: holding the write lock
        nonlocal upserts
        while not stop.is_set():
            upserts += 1
            with store.write_lock:
                store.upsert([card(c, upserts) for c in range(6)])
            with store.write_lock:
                store.append([Row(id=f"m_x_{upserts}", user_key="u" * 32, user_id="u", session_key="s" * 32,
                                  session_id="s", request_key=f"x{upserts:031d}", kind="message", position=0,
                                  role="user", text="more", refs="", content="", metadata="{}", created_at=0,
                                  timestamp=None)])

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for _ in range(8):
            store.optimize(timedelta(0))  # raises on a refused commit
    finally:
        stop.set()
        thread.join()
    assert upserts > 8
    assert store.count("kind = 'card'") == 6
    assert store.count("kind = 'message'") == 60 + upserts
