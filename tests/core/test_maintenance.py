"""Session history cache and compaction: the pieces that keep Adds fast as a table grows."""

import threading
from datetime import timedelta

from codemem.models import Message
from codemem.sessions import MessageCache
from codemem.store.maintenance import Compactor


class FakeStore:
    """Answers what MessageCache and Compactor ask of a store, and records it."""

    def __init__(self, stored: list[Message], fail_times: int = 0) -> None:
        self.stored = stored
        self.reads = 0
        self.write_lock = threading.Lock()
        self.fail_times = fail_times
        self.optimized_holding_lock: list[bool] = []

    def rows(self, where: str, columns: list[str], limit: int = 0) -> list[dict[str, object]]:
        self.reads += 1
        return [
            {"role": m.role, "text": m.text, "content": "", "timestamp": None, "created_at": 0,
             "request_key": "r", "position": i}
            for i, m in enumerate(self.stored)
        ]

    def optimize(self, keep: timedelta) -> None:
        self.optimized_holding_lock.append(self.write_lock.locked())
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
