"""Adds on a new store, while Searches come from the first second (issue 29).

An agent fleet starts on an empty memory and writes and reads at once. A Search of a memory
that does not exist yet used to embed its query and run every retriever; an Add waited for
the embedding model (torch) to load, and that load, starved of the GIL by the Searches,
ended only when they stopped: no Add was answered while Searches kept coming. Here a real
server starts cold (the encoder is the packaged ONNX graph: no torch), Searches run throughout, and every Add client must have Adds acknowledged while the Searches
are still coming (counted, not timed: how fast is the benchmarks' to say), then survive a
SIGKILL.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path

import httpx

from tests.server import Server

ADDERS, SEARCHERS, USERS = 4, 16, 4
LOAD_S = 10.0


async def _load(url: str) -> tuple[list[tuple[int, str, str]], list[float], list[int]]:
    """ADDERS clients of single-message Adds (a session each) and SEARCHERS of Searches over
    the same USERS for LOAD_S; returns (client, user, mark) per acknowledged Add (client -1:
    acknowledged once the Searches had stopped), when each
    Search was answered (monotonic time), and every status that was neither 200 nor a 503 shed."""
    acked: list[tuple[int, str, str]] = []
    searched: list[float] = []
    bad: list[int] = []
    deadline = time.monotonic() + LOAD_S
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        async def adder(i: int) -> None:
            n = 0
            while time.monotonic() < deadline:
                user, mark = f"user-{i % USERS}", f"mark{i}x{n}"
                body = {"user_id": user, "session_id": f"s-{i}-{n}", "request_id": f"r-{i}-{n}",
                        "messages": [{"role": "user", "content": f"QuerySet.filter(None) raises TypeError {mark}"}]}
                r = await client.post("/add", json=body)
                if r.status_code == 200:
                    acked.append((i if time.monotonic() < deadline else -1, user, mark))  # -1: after the Searches
                elif r.status_code != 503:
                    bad.append(r.status_code)
                n += 1

        async def searcher(i: int) -> None:
            while time.monotonic() < deadline:
                r = await client.post("/search", json={"user_id": f"user-{i % USERS}",
                                                       "query": "TypeError when filtering with None", "top_k": 5})
                if r.status_code == 200:
                    searched.append(time.monotonic())
                elif r.status_code != 503:
                    bad.append(r.status_code)

        await asyncio.gather(*(adder(i) for i in range(ADDERS)), *(searcher(i) for i in range(SEARCHERS)))
    return acked, searched, bad


def test_adds_on_a_new_store_are_answered_while_searches_come(tmp_path: Path) -> None:
    server = Server(tmp_path / "data").start(wait_for_model=False)
    try:
        acked, searched, bad = asyncio.run(_load(server.url))
    finally:
        server.kill()  # SIGKILL: what was acknowledged must already be durable
    assert not bad, f"errors under load: {bad}"
    assert searched, "the Searches were not served"
    # Each client's Adds are sequential: every client with Adds acknowledged while the
    # Searches kept coming shows that none was starved (on the old code none was, until the
    # Searches stopped), and the Searches were answered beside them.
    per_client = Counter(i for i, _, _ in acked)
    assert all(per_client[i] >= 1 for i in range(ADDERS)), \
        f"Adds acknowledged per client while {len(searched)} Searches ran: {dict(per_client)}"

    restarted = Server(tmp_path / "data").start(wait_for_model=False)
    try:
        with httpx.Client(base_url=restarted.url, timeout=60) as client:
            for _, user, mark in acked:
                r = client.post("/search", json={"user_id": user, "query": mark, "top_k": 5})
                assert r.status_code == 200
                assert any(mark in str(item["content"]) for item in r.json()["data"]), f"{mark} lost"
    finally:
        restarted.kill()
