"""Run the shipped deploy/Caddyfile locally, in front of a codemem server on loopback.

    with running_caddy(folder, upstream="127.0.0.1:8000") as proxy:
        httpx.get(proxy.url + "/health", verify=proxy.tls)

The Caddyfile is used as shipped, with what a local run needs beside it: no admin endpoint,
no HTTP redirect port, nothing installed into the machine's trust store, Caddy's state in
`folder`, and `tls internal` on the site (a certificate from Caddy's own CA, which `tls`
trusts). `extra` adds sites after it (a test's second proxy). The benchmark through the
proxy (`eval.load.proxy`) and the proxy's tests (`tests/deploy/test_proxy.py`) share this.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import ssl
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from eval._paths import REPO_ROOT
from eval._server import free_port

CADDYFILE = REPO_ROOT / "deploy" / "Caddyfile"
SITE = "{$CODEMEM_DOMAIN"


class CaddyError(RuntimeError):
    pass


@dataclass(frozen=True)
class Proxy:
    url: str  # the Caddyfile's site
    tls: ssl.SSLContext  # trusts Caddy's internal CA
    log_path: Path  # everything Caddy wrote (its default logger and any log the Caddyfile sets)
    pid: int
    ca_path: Path  # Caddy's internal root certificate, which `tls` trusts


def local_caddyfile(folder: Path, extra: str = "", shipped: Path = CADDYFILE) -> str:
    """deploy/Caddyfile as shipped (or another commit's, `shipped`), made to run on this
    machine (module docstring)."""
    text = shipped.read_text()
    site_line = next(line for line in text.splitlines() if line.startswith(SITE))
    if text.count("\n{\n") != 1 or text.count(SITE) != 1:
        raise CaddyError("deploy/Caddyfile: expected one global block and one site")
    text = text.replace("\n{\n", f"""
{{
	admin off
	auto_https disable_redirects
	skip_install_trust
	storage file_system {{
		root {folder}/state
	}}
""", 1)
    text = text.replace(site_line, f"{site_line}\n\ttls internal", 1)
    return text + extra


def caddy_binary() -> str | None:
    return shutil.which("caddy")


def _handshakes(port: int, tls: ssl.SSLContext) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as raw, \
                tls.wrap_socket(raw, server_hostname="localhost"):
            return True
    except (OSError, ssl.SSLError):
        return False


@contextlib.contextmanager
def running_caddy(folder: Path, upstream: str, extra: str = "", env: dict[str, str] | None = None,
                  ready_path: str | None = "/health", ready_timeout_s: float = 60.0,
                  shipped: Path = CADDYFILE) -> Iterator[Proxy]:
    """Caddy with the local Caddyfile on a free port, until the block ends; ready once its
    certificate exists and `ready_path` answers 200 through it (None: once it answers at all)."""
    caddy = caddy_binary()
    if caddy is None:
        raise CaddyError("no caddy on the PATH (apt-get install caddy)")
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    config = folder / "Caddyfile"
    config.write_text(local_caddyfile(folder, extra, shipped))
    run_env = {"PATH": "/usr/bin:/bin", "HOME": str(folder), "XDG_DATA_HOME": str(folder / "xdg-data"),
               "XDG_CONFIG_HOME": str(folder / "xdg-config"),
               "CODEMEM_DOMAIN": f"localhost:{port}", "CODEMEM_UPSTREAM": upstream, **(env or {})}
    log_path = folder / "caddy.log"
    with log_path.open("ab") as log:
        proc = subprocess.Popen([caddy, "run", "--config", str(config), "--adapter", "caddyfile"],
                                env=run_env, stdout=log, stderr=subprocess.STDOUT)
    try:
        url = f"https://localhost:{port}"
        root = folder / "state" / "pki" / "authorities" / "local" / "root.crt"
        deadline = time.monotonic() + ready_timeout_s
        while True:
            if proc.poll() is not None:
                raise CaddyError(f"caddy exited {proc.returncode}:\n{log_path.read_text()[-3000:]}")
            if root.exists():
                tls = ssl.create_default_context(cafile=str(root))
                if ready_path is None and _handshakes(port, tls):
                    break
                with contextlib.suppress(httpx.HTTPError):
                    if ready_path and httpx.get(url + ready_path, verify=tls, timeout=2).status_code == 200:
                        break
            if time.monotonic() > deadline:
                raise CaddyError(f"caddy not ready after {ready_timeout_s:.0f} s:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.2)
        yield Proxy(url, tls, log_path, proc.pid, root)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
