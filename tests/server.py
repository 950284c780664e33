"""Start the real `codemem serve` process for tests that need a process boundary."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, data_dir: Path, env: dict[str, str] | None = None) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, "CODEMEM_COMPACT_INTERVAL_S": "1", **(env or {})}
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 120) -> Server:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "codemem.cli", "serve", "--port", str(self.port), "--data-dir", str(self.data_dir)],
            env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.proc.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
            try:
                r = httpx.get(self.url + "/health", timeout=1)
                if r.status_code == 200 and r.json()["model_loaded"]:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.kill()
        raise TimeoutError("server did not become healthy")

    def stop(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=60)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
