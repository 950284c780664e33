"""Past its bound of requests in flight the service answers 503 with Retry-After, and recovers;
past its bound of Add bytes in flight, Adds wait their turn instead."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from api.admission import ByteBudget
from codemem.config import Settings
from codemem.memory import Memory
from tests.conftest import add_body, make_client


def test_over_capacity_is_503_with_retry_after_then_recovers(
    settings: Settings, memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    entered, release = threading.Event(), threading.Event()
    real_add = memory.add

    def slow_add(req):  # type: ignore[no-untyped-def]
        entered.set()
        release.wait(30)
        return real_add(req)

    monkeypatch.setattr(memory, "add", slow_add)
    with make_client(settings.replace({"limits.max_inflight_adds": 1}), memory) as client, ThreadPoolExecutor(1) as pool:
        first = pool.submit(client.post, "/add", json=add_body("a1"))
        assert entered.wait(30)
        refused = client.post("/add", json=add_body("a2"))
        assert refused.status_code == 503
        assert refused.headers["retry-after"] == "2"
        assert "over capacity" in refused.json()["detail"]["reason"]
        # Searches have their own bound: they still get through.
        assert client.post("/search", json={"user_id": "u1", "query": "hello", "top_k": 3}).status_code == 200
        release.set()
        assert first.result(timeout=60).status_code == 200
        # The platform's retry of the refused request is then stored.
        assert client.post("/add", json=add_body("a2")).status_code == 200
        text = client.get("/metrics").text
        assert 'codemem_requests_refused_total{kind="add"} 1.0' in text
        assert 'codemem_requests_inflight{kind="add"} 0.0' in text


def test_admitted_requests_wait_for_a_worker_and_the_one_over_the_bound_is_refused_at_once(
    settings: Settings, memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With one Add thread and room for two Adds, the second waits without running and the
    third is answered 503 while both are still pending: the refusal waits on no work."""
    started, release = _held_adds(memory, monkeypatch)
    bounded = settings.replace({"limits.max_inflight_adds": 2, "server.add_threads": 1})
    with make_client(bounded, memory) as client, ThreadPoolExecutor(2) as pool:
        first = pool.submit(client.post, "/add", json=add_body("a1"))
        _wait_until(lambda: bool(started))
        second = pool.submit(client.post, "/add", json=add_body("a2", session_id="s2"))
        _wait_until(lambda: client.app.state.admission["add"].inflight == 2)
        refused = client.post("/add", json=add_body("a3", session_id="s3"))
        assert refused.status_code == 503 and refused.headers["retry-after"] == "2"
        assert started == ["a1"]  # the second is admitted but holds no thread yet
        assert not first.done() and not second.done()
        release.set()
        assert first.result(timeout=60).status_code == 200
        assert second.result(timeout=60).status_code == 200
        assert started == ["a1", "a2"]


def test_adds_past_the_byte_bound_wait_their_turn_and_are_counted_not_refused(
    settings: Settings, memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    started, release = _held_adds(memory, monkeypatch)
    one_body = len(httpx.Request("POST", "/", json=add_body("b1")).content)
    bounded = settings.replace({"limits.max_add_bytes_inflight": one_body + 10, "server.add_threads": 4})
    with make_client(bounded, memory) as client, ThreadPoolExecutor(2) as pool:
        first = pool.submit(client.post, "/add", json=add_body("b1"))
        _wait_until(lambda: started == ["b1"])
        second = pool.submit(client.post, "/add", json=add_body("b2", session_id="s2"))
        budget = client.app.state.add_bytes
        _wait_until(lambda: budget.waiting == 1)
        text = client.get("/metrics").text
        assert "codemem_adds_queued 1.0" in text and f"codemem_add_bytes_inflight {float(one_body)}" in text
        assert started == ["b1"]  # a thread was free; the bytes were not
        release.set()
        assert first.result(timeout=60).status_code == 200
        assert second.result(timeout=60).status_code == 200
        assert started == ["b1", "b2"] and budget.held == 0 and budget.waiting == 0


def test_the_byte_budget_admits_in_order_runs_an_oversized_body_alone_and_forgets_a_gone_client() -> None:
    async def scenario() -> list[str]:
        budget = ByteBudget(100)
        order: list[str] = []
        gates = {name: asyncio.Event() for name in "abcde"}

        async def add(name: str, size: int) -> None:
            async with budget.hold(size):
                order.append(name)
                await gates[name].wait()

        a = asyncio.create_task(add("a", 60))
        await asyncio.sleep(0)
        b = asyncio.create_task(add("b", 60))  # waits: 120 > 100
        c = asyncio.create_task(add("c", 10))  # waits behind b, though it would fit: in order
        d = asyncio.create_task(add("d", 500))  # larger than the budget: alone, once all are done
        await asyncio.sleep(0.01)
        assert order == ["a"] and budget.waiting == 3
        b.cancel()  # its client went away while it waited
        await asyncio.sleep(0.01)
        assert order == ["a", "c"] and budget.held == 70
        gates["a"].set(), gates["c"].set()
        await asyncio.sleep(0.01)
        assert order == ["a", "c", "d"] and budget.held == 100
        e = asyncio.create_task(add("e", 1))
        await asyncio.sleep(0.01)
        assert order == ["a", "c", "d"]  # the oversized one runs alone
        gates["d"].set(), gates["e"].set()
        await asyncio.gather(a, c, d, e)
        assert budget.held == 0 and budget.waiting == 0
        return order

    assert asyncio.run(scenario()) == ["a", "c", "d", "e"]


def _held_adds(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], threading.Event]:
    """Adds that note their request_id as they start and then wait for the event before storing."""
    started: list[str] = []
    release = threading.Event()
    real_add = memory.add

    def slow_add(req):  # type: ignore[no-untyped-def]
        started.append(req.request_id)
        release.wait(30)
        return real_add(req)

    monkeypatch.setattr(memory, "add", slow_add)
    return started, release


def _wait_until(condition: Callable[[], bool], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)
