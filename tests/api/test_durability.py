"""Acknowledged Adds survive a stop and a crash (SIGKILL) of the real server process."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
import pytest

from tests.answers import message_texts
from tests.conftest import add_body
from tests.server import Server

# Everything stored comes back: durability is read through Search with no relevance floor
# and no quiet answers (what the ranking leaves out is not what these tests are about).
READ_ALL = {"CODEMEM_RELEVANCE_FLOOR": "0", "CODEMEM_QUIET_BELOW": "0"}


def _search_all(url: str, user_id: str) -> set[str]:
    r = httpx.post(url + "/search", json={"query": "edited file test", "user_id": user_id, "top_k": 100_000}, timeout=60)
    assert r.status_code == 200
    return set(message_texts(r.json()["data"]))


def test_restart_keeps_everything_acknowledged(tmp_path: Path) -> None:
    server = Server(tmp_path / "data", env=READ_ALL).start()
    try:
        expected = set()
        for i in range(3):
            texts = tuple(f"chunk {i} message {j}: edited file src/mod_{i}.py and ran the test" for j in range(4))
            r = httpx.post(server.url + "/add", json=add_body(f"r{i}", texts=texts), timeout=60)
            assert r.status_code == 200
            expected |= set(texts)
        assert server.stop() == 0
        server.start()
        assert _search_all(server.url, "u1") == expected
    finally:
        server.kill()


@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM"])
def test_a_stop_mid_stream_loses_no_acknowledged_add(tmp_path: Path, how: str) -> None:
    """SIGKILL: a crash. SIGTERM: a graceful stop, whose in-flight Adds finish or are not
    acknowledged. Either way every acknowledged Add is there after a restart, whole."""
    server = Server(tmp_path / "data", env=READ_ALL).start()
    acked: set[str] = set()
    stop = threading.Event()

    def writer(worker: int) -> None:
        i = 0
        with httpx.Client(timeout=30) as client:
            while not stop.is_set():
                texts = (f"worker {worker} add {i} edited file test", f"worker {worker} add {i} file second message")
                try:
                    r = client.post(server.url + "/add", json=add_body(f"w{worker}-{i}", texts=texts))
                except httpx.HTTPError:
                    return
                if r.status_code == 200:
                    acked.update(texts)
                i += 1

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    try:
        while len(acked) < 40:
            threading.Event().wait(0.05)
        if how == "SIGKILL":
            server.kill()  # while Adds are in flight
        else:
            assert server.stop() == 0  # graceful, while Adds are in flight
        stop.set()
        for t in threads:
            t.join(timeout=60)
        server.start()
        found = _search_all(server.url, "u1")
        assert acked <= found, f"lost {len(acked - found)} acknowledged messages"
        # No half-written chunk: each Add's two messages are visible together or not at all.
        for text in found:
            twin = text.replace("edited file test", "file second message") if "edited" in text else text.replace("file second message", "edited file test")
            assert twin in found, f"half of a chunk is visible: {text!r}"
    finally:
        stop.set()
        server.kill()
