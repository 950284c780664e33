"""Past its bound of requests in flight the service answers 503 with Retry-After, and recovers."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

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
    with make_client(settings.replace(max_inflight_adds=1), memory) as client, ThreadPoolExecutor(1) as pool:
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
