"""`codemem serve --workers 2`: processes sharing one data directory behave as one service."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import lancedb
import pytest

from tests.server import Server


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("workers")
    server = Server(root / "data", args=("--workers", "2"), log_path=root / "server.log").start(timeout=180)
    wait_until_ready(server, workers=2, timeout=180)
    yield server
    assert server.stop() == 0


USER = "team-7f3a9c"


def add(url: str, request_id: str, session_id: str, text: str) -> httpx.Response:
    body = {"request_id": request_id, "user_id": USER, "session_id": session_id,
            "messages": [{"role": "user", "content": text}]}
    # A fresh connection per request: the kernel hands it to either worker.
    return httpx.post(url + "/add", json=body, timeout=120)


def search(url: str, query: str) -> list[dict]:
    r = httpx.post(url + "/search", json={"user_id": USER, "query": query, "top_k": 5}, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()["data"]


def access_entries(server: Server, route: str) -> list[dict]:
    entries = [json.loads(line) for line in server.log().splitlines() if line.startswith("{")]
    return [e for e in entries if e.get("logger") == "codemem.access" and e.get("route") == route]


def access_pids(server: Server, route: str) -> set[int]:
    return {e["pid"] for e in access_entries(server, route)}


def wait_until_ready(server: Server, workers: int, timeout: float) -> set[int]:
    """Wait until `workers` workers have each answered /health with their model loaded, and
    return their pids. `Server.start` returns once one worker has: on a loaded machine the
    other can take a minute more (its model loading, or uvicorn's supervisor starting it
    again after it missed a 5 s health ping), and meanwhile the kernel hands it few
    connections. Each probe is told apart by its access-log line, written once it is
    answered; probes go one at a time, so the newest /health line is the probe's."""
    deadline = time.monotonic() + timeout
    ready: set[int] = set()
    seen = len(access_entries(server, "/health"))
    while len(ready) < workers:
        assert time.monotonic() < deadline, f"workers with the model loaded: {ready}"
        time.sleep(0.2)  # also lets the line of the request before land
        seen = max(seen, len(access_entries(server, "/health")))
        loaded = httpx.get(server.url + "/health", timeout=30).json()["model_loaded"]
        while len(entries := access_entries(server, "/health")) == seen:
            assert time.monotonic() < deadline, "a /health answer left no access-log line"
            time.sleep(0.01)
        seen = len(entries)
        if loaded:
            ready.add(entries[-1]["pid"])
    return ready


def test_an_add_answered_by_one_worker_is_found_at_once_by_either(served: Server) -> None:
    """An Add is found by the very next Search, on a new connection, whichever worker answers
    it: also the worker that did not store it (one worker runs every Add, the other forwards
    its own). Which worker takes a connection is the kernel's choice, so rounds of an Add and
    two Searches go on until each worker has answered both an Add and a Search (a few
    rounds, with both workers ready), within a deadline."""
    deadline = time.monotonic() + 60
    for i in itertools.count():
        token = f"quokka{i}widget"
        assert add(served.url, f"raw-{i}", f"s-{i}", f"fixed {token} overflow in the parser").status_code == 200
        # Immediately, on new connections: whichever worker answers sees the Add.
        for _ in range(2):
            assert any(token in json.dumps(hit) for hit in search(served.url, token)), token
        adds, searches = access_pids(served, "/add"), access_pids(served, "/search")
        if i >= 3 and len(adds) == len(searches) == 2:
            break
        assert time.monotonic() < deadline, f"after {i + 1} rounds, Adds answered by {adds}, Searches by {searches}"
    # One of them ran every Add, so a Search answered by the other found what it did not store.
    leaders = [json.loads(line)["pid"] for line in served.log().splitlines()
               if line.startswith("{") and "runs every Add" in line]
    assert len(leaders) == 1 and leaders[0] in adds
    assert searches - set(leaders), searches


def test_concurrent_retries_across_workers_store_one_copy(served: Server) -> None:
    sends = [(f"retry-{i}", f"r-{i}", f"retried message {i}") for i in range(10) for _ in range(3)]
    with ThreadPoolExecutor(30) as pool:
        codes = list(pool.map(lambda a: add(served.url, *a).status_code, sends))
    assert codes == [200] * len(sends)
    table = lancedb.connect(str(served.data_dir)).open_table("items")
    for i in range(10):
        rows = table.search().where(f"kind = 'message' AND session_id = 'r-{i}'").select(["id"]).to_list()
        assert len(rows) == 1, rows


def test_a_request_id_reused_with_another_body_is_refused_whichever_worker_answers(served: Server) -> None:
    assert add(served.url, "reused-w", "rw", "first content of a reused id").status_code == 200
    with ThreadPoolExecutor(8) as pool:  # new connections: either worker answers, one runs the Adds
        codes = list(pool.map(lambda i: add(served.url, "reused-w", "rw", f"other content {i}").status_code, range(8)))
    assert codes == [409] * 8
    assert add(served.url, "reused-w", "rw", "first content of a reused id").status_code == 200  # a retry
    hits = search(served.url, "content reused")
    assert "first content of a reused id" in json.dumps(hits) and "other content" not in json.dumps(hits)


def test_metrics_sum_requests_over_workers(served: Server) -> None:
    before = _requests(served, "/health")
    for _ in range(6):
        assert httpx.get(served.url + "/health", timeout=10).status_code == 200
    assert _requests(served, "/health") == before + 6


def _requests(server: Server, path: str) -> float:
    text = httpx.get(server.url + "/metrics", timeout=10).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("codemem_http_requests_total{") and f'path="{path}"' in line
    )



def test_logs_are_json_lines_without_content_or_user_ids(served: Server) -> None:
    assert add(served.url, "log-check", "s-log", "zebrafinch secret content").status_code == 200
    search(served.url, "zebrafinch")
    lines = [line for line in served.log().splitlines() if line and not line.startswith("codemem serving on")]
    entries = [json.loads(line) for line in lines]  # every line is one JSON object
    assert any(e.get("logger") == "codemem.access" and e.get("route") == "/add" for e in entries)
    assert not [line for line in lines if "zebrafinch" in line or USER in line]
