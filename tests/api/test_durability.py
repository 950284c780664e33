"""Acknowledged Adds survive a stop and a crash (SIGKILL) of the real server process."""

from __future__ import annotations

import itertools
import threading
import time
from pathlib import Path

import httpx
import pytest

from codemem.encoders import ShippedEmbedder
from codemem.store.filters import user_scope
from codemem.store.lance import Store
from codemem.store.schema import key_of
from tests.answers import message_texts
from tests.conftest import add_body
from tests.server import Server

# Everything stored comes back: a restarted server's Search is read with no relevance floor
# and no quiet answers (what the ranking leaves out is not what these tests are about).
READ_ALL = {"CODEMEM_RELEVANCE_FLOOR": "0", "CODEMEM_QUIET_BELOW": "0"}


def _search_all(url: str, user_id: str) -> set[str]:
    r = httpx.post(url + "/search", json={"query": "edited file test", "user_id": user_id, "top_k": 100_000}, timeout=60)
    assert r.status_code == 200
    return set(message_texts(r.json()["data"]))


def _stored_messages(data_dir: Path | str) -> set[str]:
    """Every message of user u1 in a data directory whose server has stopped, read through a
    store opened afresh, as a restarted server opens it, with no ranking in between."""
    store = Store(str(data_dir), (shipped := ShippedEmbedder()).name, shipped.dim)
    return {str(row["text"]) for row in store.rows(f"{user_scope(key_of('u1'))} AND kind = 'message'", ["text"])}


def test_restart_keeps_everything_acknowledged(tmp_path: Path) -> None:
    """Every Add acknowledged before a graceful stop is found by the restarted server's Search."""
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
    acknowledged. Either way every acknowledged Add is in the data directory, whole, when it
    is opened again (read from the store itself: the restart of a server and its Search are
    `test_restart_keeps_everything_acknowledged`'s, and a second model load would double
    this test's time).

    Until the stop every Add must be acknowledged: a writer that meets an error then fails
    the test (it does not just stop writing); only from the stop on is a refused or dropped
    request expected, and then the writer stops. Waiting for the Adds has a deadline."""
    server = Server(tmp_path / "data").start()
    lock = threading.Lock()
    acked: set[str] = set()
    errors: list[str] = []  # before the stop: each fails the test
    stopping = threading.Event()  # the server is being stopped: errors are expected from now on

    def writer(worker: int) -> None:
        with httpx.Client(timeout=30) as client:
            for i in itertools.count():
                texts = (f"worker {worker} add {i} edited file test", f"worker {worker} add {i} file second message")
                try:
                    r = client.post(server.url + "/add", json=add_body(f"w{worker}-{i}", texts=texts))
                except httpx.HTTPError as exc:
                    failure = f"worker {worker} add {i}: {exc!r}"
                else:
                    if r.status_code == 200:
                        with lock:
                            acked.update(texts)
                        continue
                    failure = f"worker {worker} add {i}: {r.status_code} {r.text[:300]}"
                if not stopping.is_set():
                    with lock:
                        errors.append(failure)
                return

    threads = [threading.Thread(target=writer, args=(w,), daemon=True) for w in range(4)]
    for t in threads:
        t.start()
    try:
        deadline = time.monotonic() + 60
        while len(acked) < 40:
            assert not errors, f"{len(errors)} Add(s) failed before the stop: {errors}"
            assert time.monotonic() < deadline, f"only {len(acked)} messages acknowledged in 60 s"
            time.sleep(0.05)
        stopping.set()
        if how == "SIGKILL":
            server.kill()  # while Adds are in flight
        else:
            assert server.stop() == 0  # graceful, while Adds are in flight
        # Each writer ends at its first refused request (a request times out in 30 s); all
        # of them within one deadline.
        deadline = time.monotonic() + 60
        for t in threads:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        running = sum(t.is_alive() for t in threads)
        assert not running, f"{running} writer(s) still running 60 s after the stop"
        assert not errors, f"{len(errors)} Add(s) failed before the stop: {errors}"
        found = _stored_messages(server.data_dir)
        assert acked <= found, f"lost {len(acked - found)} acknowledged messages"
        # No half-written chunk: each Add's two messages are visible together or not at all.
        for text in found:
            twin = text.replace("edited file test", "file second message") if "edited" in text else text.replace("file second message", "edited file test")
            assert twin in found, f"half of a chunk is visible: {text!r}"
    finally:
        stopping.set()
        server.kill()
