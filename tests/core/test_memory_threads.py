"""A Memory starts its threads where its work needs them: a search starts no writing thread,
the first write starts the writer, the compactor and the refresher, and close stops whatever
started (a Memory for one CLI search must not start a writer it never uses)."""

from __future__ import annotations

import threading
from pathlib import Path

from codemem.config import Settings
from codemem.contract.types import AddRequest, Message, SearchRequest
from codemem.encoders import ShippedEmbedder
from codemem.memory import Memory

WRITING = ("codemem-writer", "codemem-compactor", "codemem-refresher")


def _new_threads(before: set[threading.Thread]) -> set[str]:
    """Names of this Memory's live threads: those started since `before`, pool numbers dropped."""
    return {t.name.split("_")[0] for t in threading.enumerate() if t not in before and t.name.startswith("codemem-")}


def _add(memory: Memory, request_id: str) -> None:
    msgs = [Message("user", "Fix the crash in django/db/models/query.py"),
            Message("assistant", "Edited django/db/models/query.py: QuerySet.filter checks None")]
    memory.add(AddRequest(request_id, "u1", "s1", msgs))


def test_a_search_starts_no_writing_thread_and_an_add_does(tmp_path: Path, embedder: ShippedEmbedder) -> None:
    # A compaction interval, so that a started compactor runs a thread.
    settings = Settings().replace({"storage.data_dir": str(tmp_path / "data"), "maintenance.interval_s": 3600})
    with Memory(settings, embedder=embedder) as seeding:
        _add(seeding, "r0")

    before = set(threading.enumerate())
    memory = Memory(settings, embedder=embedder)
    try:
        assert _new_threads(before) == set()  # constructing starts nothing
        hits = memory.search(SearchRequest("u1", "crash in QuerySet.filter", top_k=3))
        assert hits, "the search found the seeded experience (so it ran its retrievers)"
        started = _new_threads(before)
        assert "codemem-search" in started
        assert not started & set(WRITING), started
        assert memory.stats()["pending_writes"] == 0  # reading the figures starts no writer either
        assert not _new_threads(before) & set(WRITING)

        _add(memory, "r1")
        assert set(WRITING) <= _new_threads(before)
    finally:
        memory.close()
    assert not _new_threads(before) & set(WRITING), "close stops every writing thread it started"


def test_close_after_only_searching_and_start_for_a_server(tmp_path: Path, embedder: ShippedEmbedder) -> None:
    settings = Settings().replace({"storage.data_dir": str(tmp_path / "data"), "maintenance.interval_s": 3600})
    before = set(threading.enumerate())
    with Memory(settings, embedder=embedder) as memory:
        assert memory.search(SearchRequest("nobody", "anything", top_k=5)) == []
    assert _new_threads(before) == set()

    with Memory(settings, embedder=embedder) as server:
        server.start()
        assert set(WRITING) <= _new_threads(before)
    assert not _new_threads(before) & set(WRITING)
