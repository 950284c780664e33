"""Start and stop the real `codemem serve` for a benchmark, on loopback only.

    with running_server(env={"CODEMEM_COMPACT_INTERVAL_S": "0"}) as srv:
        httpx.post(srv.url + "/add", json=...)

The server runs as a subprocess (`python -m codemem.cli serve`) in its own process group
(so a Ctrl-C in the terminal reaches only the benchmark, which then shuts the server down
itself), on a free 127.0.0.1 port, with a temporary data directory unless one is given.
On exit, always (also on an exception or Ctrl-C): SIGTERM, then SIGKILL after a timeout.
Every wait is bounded.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

HOST = "127.0.0.1"
REPO_ROOT = Path(__file__).resolve().parent.parent


class ServerError(RuntimeError):
    pass


@dataclass
class Server:
    url: str
    data_dir: str
    log_path: str
    pid: int
    env: dict[str, str]

    def log_tail(self, lines: int = 40) -> str:
        return _tail(self.log_path, lines)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _tail(path: str, lines: int) -> str:
    try:
        with open(path, "rb") as f:
            return b"\n".join(f.read().splitlines()[-lines:]).decode("utf-8", "replace")
    except OSError:
        return ""


def _wait_ready(proc: subprocess.Popen[bytes], url: str, log_path: str, timeout_s: float,
                need_model: bool) -> None:
    deadline = time.monotonic() + timeout_s
    last = "no answer yet"
    with httpx.Client(timeout=2.0, trust_env=False) as client:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise ServerError(f"codemem serve exited with {proc.returncode}:\n{_tail(log_path, 40)}")
            try:
                r = client.get(url + "/health")
                if r.status_code == 200:
                    body = r.json()
                    if body.get("model_loaded") or not need_model:
                        return
                    last = f"health {body}"
                else:
                    last = f"HTTP {r.status_code}"
            except httpx.HTTPError as exc:
                last = type(exc).__name__
            time.sleep(0.25)
    raise ServerError(f"codemem serve not ready after {timeout_s:.0f} s ({last}):\n{_tail(log_path, 40)}")


def stop(proc: subprocess.Popen[bytes], term_timeout_s: float = 60.0) -> int:
    """SIGTERM the server's process group, SIGKILL it after `term_timeout_s`; returns the exit code."""
    if proc.poll() is not None:
        return proc.returncode
    interrupted = False
    try:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=term_timeout_s)
        except subprocess.TimeoutExpired:
            pass
    except KeyboardInterrupt:  # a second Ctrl-C while waiting: stop waiting, kill now
        interrupted = True
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
    if interrupted:
        raise KeyboardInterrupt
    return proc.returncode if proc.returncode is not None else -9


def use_source(source: str | os.PathLike[str] | None) -> None:
    """Make this process import the project from `source` (a snapshot) too, before any
    `codemem` import, so in-process steps match the server's code."""
    if source:
        import sys as _sys

        root = str(Path(source).resolve())
        if root not in _sys.path:
            _sys.path.insert(0, root)
        for name in [m for m in _sys.modules if m.split(".")[0] in ("codemem", "api", "parsers")]:
            del _sys.modules[name]


@contextlib.contextmanager
def running_server(
    data_dir: str | os.PathLike[str] | None = None,
    env: dict[str, str] | None = None,
    *,
    ready_timeout_s: float = 180.0,
    stop_timeout_s: float = 60.0,
    need_model: bool = True,
    keep_data: bool = False,
    log_path: str | None = None,
    source: str | os.PathLike[str] | None = None,
) -> Iterator[Server]:
    """Run `codemem serve` until the block ends; yields a `Server` with the base URL.

    `env` adds/overrides `CODEMEM_*` settings for the server (inherited `CODEMEM_*`
    variables of this process are dropped first, so runs are reproducible). `source` runs
    the server from another copy of the project (a snapshot directory holding `codemem/`,
    `api/`, ...) instead of this checkout: it becomes the working directory and leads
    PYTHONPATH, ahead of the editable install. A temporary
    data directory is removed afterwards unless `keep_data`; a given one is never removed.
    """
    own_dir = data_dir is None
    ddir = tempfile.mkdtemp(prefix="cmbench-data-") if own_dir else str(data_dir)
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("CODEMEM_")}
    child_env.update(env or {})
    child_env.setdefault("PYTHONUNBUFFERED", "1")
    root = str(Path(source).resolve()) if source else str(REPO_ROOT)
    if source:
        child_env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in child_env.get("PYTHONPATH", "").split(os.pathsep) if p])
    # Loopback only: keep any proxy settings away from the benchmark's own traffic too.
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        child_env.pop(var, None)
    log_file_path = log_path or os.path.join(tempfile.gettempdir(), f"cmbench-serve-{os.getpid()}-{time.time_ns()}.log")
    proc: subprocess.Popen[bytes] | None = None
    # `python -m codemem.cli serve`, through a two-line launcher file: other sessions on this
    # machine clean up with `pkill -f "codemem serve"`-style kills, which once stopped a
    # benchmark's server mid-run; a neutral command line keeps this one out of their way.
    launch_dir = tempfile.mkdtemp(prefix="cmbench-")
    launcher = os.path.join(launch_dir, "bench_srv.py")
    with open(launcher, "w") as f:
        f.write("import runpy, sys\nsys.argv[0] = 'codemem'\nrunpy.run_module('codemem.cli', run_name='__main__', alter_sys=True)\n")
    try:
        for attempt in range(3):  # the free port can be taken between probe and bind: retry
            port = free_port()
            url = f"http://{HOST}:{port}"
            with open(log_file_path, "ab") as log:
                proc = subprocess.Popen(
                    [sys.executable, launcher, "serve", "--host", HOST, "--port", str(port), "--data-dir", ddir],
                    cwd=root, env=child_env, stdin=subprocess.DEVNULL, stdout=log,
                    stderr=subprocess.STDOUT, start_new_session=True,
                )
            try:
                _wait_ready(proc, url, log_file_path, ready_timeout_s, need_model)
                break
            except ServerError:
                stop(proc, stop_timeout_s)
                if attempt == 2 or "address already in use" not in _tail(log_file_path, 20).lower():
                    raise
        assert proc is not None
        yield Server(url=url, data_dir=ddir, log_path=log_file_path, pid=proc.pid, env=dict(env or {}))
    finally:
        if proc is not None:
            stop(proc, stop_timeout_s)
        if own_dir and not keep_data:
            shutil.rmtree(ddir, ignore_errors=True)
        shutil.rmtree(launch_dir, ignore_errors=True)


def proc_cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of a process (all its threads) so far; None if unreadable."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None
