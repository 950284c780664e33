"""The endpoint as deploy/ builds it: Debian's `caddy` with deploy/Caddyfile (its timeouts,
body limit and health check; `tls internal` for a certificate from Caddy's own CA) in front
of a real `codemem serve` with a key. Through it, over HTTPS: Add and Search, a 25 MiB Add,
an Add longer than a proxy's usual timeout, and the platform's retry of an Add that a proxy
gave up on while it was still being stored."""

from __future__ import annotations

import shutil
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from codemem.config import Settings
from codemem.embedding import MiniLMEmbedder
from codemem.memory import Memory
from tests.conftest import add_body
from tests.server import Server, free_port
from tests.shared_data import in_ci

ROOT = Path(__file__).resolve().parents[2]
CADDYFILE = ROOT / "deploy" / "Caddyfile"
SITE = "{$CODEMEM_DOMAIN:localhost} {"
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

    def client(self, url: str | None = None) -> httpx.Client:
        return httpx.Client(base_url=url or self.url, verify=self.tls, timeout=httpx.Timeout(180, connect=10))


def _caddy() -> str:
    found = shutil.which("caddy")
    if found:
        return found
    msg = "no caddy on the PATH (apt-get install caddy; .ci/run installs it)"
    if in_ci():
        pytest.fail(f"CI=true and {msg}", pytrace=False)
    pytest.skip(msg)


def caddyfile(folder: Path, impatient_port: int) -> str:
    """deploy/Caddyfile as shipped, and what a test run needs beside it: no admin endpoint, no
    HTTP redirect port, nothing installed into the machine's trust store, its state in
    `folder`, `tls internal` on the site, and the impatient proxy's site."""
    text = CADDYFILE.read_text()
    assert text.count(SITE) == 1 and text.count("\n{\n") == 1, "deploy/Caddyfile: one global block, one site"
    text = text.replace("\n{\n", f"""
{{
	admin off
	auto_https disable_redirects
	skip_install_trust
	storage file_system {{
		root {folder}/state
	}}
""", 1)
    text = text.replace(SITE, f"{SITE}\n\ttls internal", 1)
    return text + f"""
localhost:{impatient_port} {{
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
    caddy = _caddy()
    folder = tmp_path_factory.mktemp("proxy")
    server = Server(folder / "data", module="tests.deploy.slow_serve",
                    env={"CODEMEM_API_KEY": KEY["Authorization"].split()[1], "CODEMEM_TEST_SLOW_ADD_S": str(SLOW_ADD_S)})
    port, impatient_port = free_port(), free_port()
    (folder / "Caddyfile").write_text(caddyfile(folder, impatient_port))
    env = {"PATH": "/usr/bin:/bin", "HOME": str(folder), "XDG_DATA_HOME": str(folder / "xdg-data"),
           "XDG_CONFIG_HOME": str(folder / "xdg-config"),
           "CODEMEM_DOMAIN": f"localhost:{port}", "CODEMEM_UPSTREAM": f"127.0.0.1:{server.port}"}
    server.start()
    log = (folder / "caddy.log").open("wb")
    proxy = subprocess.Popen([caddy, "run", "--config", str(folder / "Caddyfile"), "--adapter", "caddyfile"],
                             env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        root = folder / "state" / "pki" / "authorities" / "local" / "root.crt"
        deadline = time.monotonic() + 60
        while True:
            assert proxy.poll() is None, (folder / "caddy.log").read_text()[-3000:]
            if root.exists():
                tls = ssl.create_default_context(cafile=str(root))
                try:
                    if httpx.get(f"https://localhost:{port}/health", verify=tls, timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
            assert time.monotonic() < deadline, (folder / "caddy.log").read_text()[-3000:]
            time.sleep(0.2)
        yield Endpoint(f"https://localhost:{port}", f"https://localhost:{impatient_port}", tls, server)
    finally:
        proxy.terminate()
        proxy.wait(timeout=30)
        log.close()
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
        endpoint: Endpoint, embedder: MiniLMEmbedder) -> None:
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
