"""Start the real `codemem serve` process for tests that need a process boundary."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, data_dir: Path | str, env: dict[str, str] | None = None, args: tuple[str, ...] = (),
                 log_path: Path | None = None, module: str = "cli", scheme: str = "http",
                 verify: str | bool = True) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.url = f"{scheme}://127.0.0.1:{self.port}"
        self.module, self.verify = module, verify  # `module`: what `python -m` runs, `codemem` by default
        self.env = {**os.environ, "CODEMEM_COMPACT_INTERVAL_S": "1", **(env or {})}
        self.args = args
        # The server's log goes to a file: a pipe nobody reads would fill and block it.
        self.log_path = log_path or Path(tempfile.mkstemp(prefix="codemem-server-", suffix=".log")[1])
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 120, wait_for_model: bool = True) -> Server:
        """Start the process and wait until /health answers (and, with `wait_for_model`,
        says the model is loaded; without, the server is as cold as a fresh start)."""
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", self.module, "serve", "--port", str(self.port),
                 "--data-dir", str(self.data_dir), *self.args],
                env=self.env, stdout=subprocess.DEVNULL, stderr=log,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.log()[-2000:]}")
            try:
                r = httpx.get(self.url + "/health", timeout=1, verify=self.verify)
                if r.status_code == 200 and (r.json()["model_loaded"] or not wait_for_model):
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.kill()
        raise TimeoutError("server did not become healthy")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> int:
        """SIGTERM; 0 when the server shut down gracefully (uvicorn re-raises the signal after
        a graceful shutdown, so the exit status alone reads -15)."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=60)
        graceful = rc in (0, -signal.SIGTERM) and "Application shutdown complete" in self.log()
        return 0 if graceful else rc or -1

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
