"""The endpoint as deploy/ builds it: Debian's `caddy` with deploy/Caddyfile (its timeouts,
body limit and log filter; `tls internal` for a certificate from Caddy's own CA) in front
of a real `codemem serve` with a key. Through it, over HTTPS: Add and Search, a 25 MiB Add,
an Add longer than a proxy's usual timeout, the platform's retry of an Add that a proxy
gave up on while it was still being stored, a restart, and no key in any of Caddy's logs."""

from __future__ import annotations

import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from codemem.config import Settings
from codemem.encoders import ShippedEmbedder
from codemem.memory import Memory
from eval._caddy import caddy_binary, running_caddy
from tests.conftest import add_body
from tests.server import Server, free_port
from tests.shared_data import in_ci

KEY = {"Authorization": "Bearer proxy-k3y"}
# Longer than the read timeout proxies and load balancers default to (nginx's
# proxy_read_timeout and an AWS ALB's idle timeout: 60 s).
SLOW_ADD_S = 65.0
GIVES_UP_S = 3  # the impatient proxy in front of the same server


@dataclass
class Endpoint:
    url: str  # deploy/Caddyfile's site
    impatient_url: str  # a proxy with a short timeout, as a default-configured one would be
    tls: ssl.SSLContext  # trusts Caddy's internal CA
    server: Server
    caddy_log: Path

    def client(self, url: str | None = None) -> httpx.Client:
        return httpx.Client(base_url=url or self.url, verify=self.tls, timeout=httpx.Timeout(180, connect=10))


def _need_caddy() -> None:
    if caddy_binary():
        return
    msg = "no caddy on the PATH (apt-get install caddy; .ci/run installs it)"
    if in_ci():
        pytest.fail(f"CI=true and {msg}", pytrace=False)
    pytest.skip(msg)


def _impatient_site(port: int) -> str:
    return f"""
localhost:{port} {{
	tls internal
	reverse_proxy {{$CODEMEM_UPSTREAM}} {{
		transport http {{
			response_header_timeout {GIVES_UP_S}s
		}}
	}}
}}
"""


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    _need_caddy()
    folder = tmp_path_factory.mktemp("proxy")
    server = Server(folder / "data", module="tests.deploy.slow_serve",
                    env={"CODEMEM_API_KEY": KEY["Authorization"].split()[1], "CODEMEM_TEST_SLOW_ADD_S": str(SLOW_ADD_S)})
    impatient_port = free_port()
    server.start()
    try:
        with running_caddy(folder, f"127.0.0.1:{server.port}", extra=_impatient_site(impatient_port)) as proxy:
            yield Endpoint(proxy.url, f"https://localhost:{impatient_port}", proxy.tls, server, proxy.log_path)
    finally:
        server.kill()


def test_add_and_search_over_https_through_the_proxy(endpoint: Endpoint) -> None:
    body = add_body("p-1", user_id="u-proxy", texts=("The release script skips the arm64 wheel on tag builds",))
    with endpoint.client() as client:
        assert client.get("/health").status_code == 200
        refused = client.post("/add", json=body)
        assert refused.status_code == 401 and refused.json() == {"detail": {"reason": "missing or wrong API key"}}
        added = client.post("/add", json=body, headers=KEY)
        assert added.status_code == 200
        assert added.json() == {"success": True, "request_id": "p-1", "user_id": "u-proxy", "session_id": "s1"}
        found = client.post("/search", json={"query": "arm64 wheel release", "user_id": "u-proxy", "top_k": 5},
                            headers=KEY)
        assert found.status_code == 200
        assert any("arm64 wheel" in hit["content"] for hit in found.json()["data"])


def _log_lines(mib: float, tag: str) -> str:
    """`mib` MiB of a build log's lines, one of them naming `tag`."""
    line = "[build] compiling src/module_{i:07d}.c -O2 -Wall -fPIC ... ok\n"
    lines = [line.format(i=i) for i in range(int(mib * 1024 * 1024 / len(line.format(i=0))))]
    lines[len(lines) // 2] = f"[build] error: {tag} undefined reference in the linker step\n"
    return "".join(lines)


def test_a_25_mib_add_passes_and_a_larger_one_is_refused(endpoint: Endpoint) -> None:
    big = add_body("p-big", user_id="u-big", texts=tuple(_log_lines(5, f"symbol_zq{i}") for i in range(5)))
    with endpoint.client() as client:
        added = client.post("/add", json=big, headers=KEY)
        assert added.status_code == 200, added.text[:500]
        assert len(httpx.Request("POST", "/", json=big).content) >= 25 * 1024 * 1024
        found = client.post("/search", json={"query": "symbol_zq3 undefined reference", "user_id": "u-big",
                                             "top_k": 5}, headers=KEY).json()["data"]
        assert found and found[0]["session_id"] == "s1"
        over = add_body("p-over", user_id="u-big", texts=(_log_lines(31, "symbol_over"),))
        assert client.post("/add", json=over, headers=KEY).status_code == 413


def test_a_long_add_passes_and_a_retry_after_a_proxy_gave_up_waits_for_the_first(
        endpoint: Endpoint, embedder: ShippedEmbedder) -> None:
    long_add = add_body("slow-long", user_id="u-slow", session_id="s-long", texts=("a long chunk",))
    retried = add_body("slow-retried", user_id="u-slow", session_id="s-retried",
                       texts=("the chunk a proxy gave up on", "and its answer"))
    answers: dict[str, httpx.Response] = {}

    def send_long() -> None:
        with endpoint.client() as client:
            answers["long"] = client.post("/add", json=long_add, headers=KEY)

    started = time.monotonic()
    long_thread = threading.Thread(target=send_long)
    long_thread.start()
    with endpoint.client(endpoint.impatient_url) as impatient:
        gave_up = impatient.post("/add", json=retried, headers=KEY)
    # The platform retries a 5xx with the same request_id and body, here through the real site,
    # while the first copy is still being stored.
    assert gave_up.status_code >= 500 and time.monotonic() - started < SLOW_ADD_S / 2
    with endpoint.client() as client:
        again = client.post("/add", json=retried, headers=KEY)
    waited = time.monotonic() - started
    long_thread.join(timeout=200)

    assert again.status_code == 200 and waited >= SLOW_ADD_S  # answered once the first copy was stored
    assert again.json() == {"success": True, "request_id": "slow-retried", "user_id": "u-slow", "session_id": "s-retried"}
    assert answers["long"].status_code == 200 and answers["long"].json()["request_id"] == "slow-long"
    memory = Memory(Settings().replace({"storage.data_dir": str(endpoint.server.data_dir)}), embedder=embedder)
    try:
        assert memory.message_count("u-slow", "s-retried") == 2  # stored once, not twice
        assert memory.message_count("u-slow", "s-long") == 1
    finally:
        memory.close()


def test_a_restarted_codemem_is_served_at_once_with_no_503(endpoint: Endpoint) -> None:
    """One upstream and no active health check: while codemem restarts a request gets 502
    (the platform retries it), and the first request after it is back is served; an upstream
    marked down would answer 503 "no upstreams available" until the next check."""
    body = add_body("p-restart", user_id="u-restart", texts=("The nightly job pins the protobuf runtime to 4.25",))
    endpoint.server.kill()
    with endpoint.client() as client:
        assert client.post("/add", json=body, headers=KEY).status_code == 502
        assert client.get("/health").status_code == 502
        endpoint.server.start(wait_for_model=False)
        added = client.post("/add", json=body, headers=KEY)  # the platform's retry
        assert added.status_code == 200, added.text[:300]
        assert [client.get("/health").status_code for _ in range(5)] == [200] * 5
        found = client.post("/search", json={"query": "protobuf runtime pin", "user_id": "u-restart", "top_k": 5},
                            headers=KEY).json()["data"]
    assert found and "protobuf runtime" in found[0]["content"]


def _closes_every_connection() -> tuple[int, threading.Event]:
    """A listener that accepts and closes at once: Caddy answers 502 and logs the error."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    done = threading.Event()

    def serve() -> None:
        with listener:
            while not done.is_set():
                try:
                    conn, _ = listener.accept()
                except TimeoutError:
                    continue
                conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return listener.getsockname()[1], done


def test_no_key_reaches_any_of_caddys_logs_when_it_answers_502(tmp_path: Path) -> None:
    _need_caddy()
    secret = "k3y-" + "7f3e9a" * 8
    port, done = _closes_every_connection()
    try:
        with running_caddy(tmp_path, f"127.0.0.1:{port}", env={"CODEMEM_UPSTREAM": f"127.0.0.1:{port}"},
                           ready_path=None) as proxy, \
                httpx.Client(base_url=proxy.url, verify=proxy.tls, timeout=30) as client:
            for headers in ({"X-Api-Key": secret}, {"x-api-key": secret}, {"Authorization": f"Bearer {secret}"},
                            {"Cookie": f"codemem_session={secret}"}):
                answer = client.post("/add", json=add_body("p-502", texts=("x",)), headers=headers)
                assert answer.status_code == 502
            time.sleep(0.5)  # Caddy's logger writes asynchronously
    finally:
        done.set()
    errors = [json.loads(line) for line in proxy.log_path.read_text().splitlines()
              if '"logger":"http.log.error"' in line]
    # Each 502 was logged with its request's headers, less the filtered ones.
    assert [e["status"] for e in errors] == [502] * 4 and all("User-Agent" in e["request"]["headers"] for e in errors)
    leaks = [str(f) for f in tmp_path.rglob("*") if f.is_file() and secret.encode() in f.read_bytes()]
    assert leaks == []
