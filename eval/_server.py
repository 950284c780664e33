"""Start and stop the real `codemem serve` for a benchmark, on loopback only.

    with running_server(env={"CODEMEM_COMPACT_INTERVAL_S": "0"}) as srv:
        httpx.post(srv.url + "/add", json=...)

The server runs as a subprocess (`python -m cli serve`, through a tiny launcher file)
in its own session (so a Ctrl-C in the terminal reaches only the benchmark, which then shuts
the server down itself), on a free 127.0.0.1 port, with a temporary data directory unless one
is given, and waits for /health to say the model is loaded. On exit, always (also on an
exception or Ctrl-C): SIGTERM, then SIGKILL after a timeout. Every wait is bounded.

`srv.revive()` restarts a server that died under the benchmark (same data dir and env; the
data is durable and Adds are idempotent by request_id, so a benchmark can retry the request
it lost); `srv.restarts` counts how often that happened, for the report.

The probes read what the server did from outside: its CPU time (`proc_cpu_s`, `group_cpu_s`
for a process group with workers) and its own time per answer from its access log
(`log_size`, `server_times`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from eval._stats import summary_ms

HOST = "127.0.0.1"
REPO_ROOT = Path(__file__).resolve().parent.parent
# `python -m cli serve` by another name: this machine is shared, and other sessions'
# clean-ups (`pkill -f "cli serve"`-style) twice stopped a benchmark's server mid-run;
# a neutral command line keeps this one out of their way.
_LAUNCHER = "import runpy, sys\nsys.argv[0] = 'codemem'\nrunpy.run_module('cli', run_name='__main__', alter_sys=True)\n"


class ServerError(RuntimeError):
    pass


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


class Server:
    """One `codemem serve` process (restartable); `url`, `pid` follow the current one."""

    def __init__(self, data_dir: str, child_env: dict[str, str], env: dict[str, str], root: str, launcher: str,
                 log_path: str, ready_timeout_s: float, stop_timeout_s: float, need_model: bool) -> None:
        self.data_dir = data_dir
        self.env = env
        self.log_path = log_path
        self.restarts = 0
        self.url = ""
        self.proc: subprocess.Popen[bytes] | None = None
        self._child_env = child_env
        self._root = root
        self._launcher = launcher
        self._ready_timeout_s = ready_timeout_s
        self._stop_timeout_s = stop_timeout_s
        self._need_model = need_model
        self._revive_lock = threading.Lock()

    @property
    def pid(self) -> int:
        return self.proc.pid if self.proc is not None else -1

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        return _tail(self.log_path, lines)

    def start(self) -> None:
        for attempt in range(3):  # the free port can be taken between probe and bind: retry
            port = free_port()
            self.url = f"http://{HOST}:{port}"
            with open(self.log_path, "ab") as log:
                self.proc = subprocess.Popen(
                    [sys.executable, self._launcher, "serve", "--host", HOST, "--port", str(port),
                     "--data-dir", self.data_dir],
                    cwd=self._root, env=self._child_env, stdin=subprocess.DEVNULL, stdout=log,
                    stderr=subprocess.STDOUT, start_new_session=True,
                )
            try:
                self._wait_ready()
                return
            except ServerError:
                self.stop()
                if attempt == 2 or "address already in use" not in self.log_tail(20).lower():
                    raise

    def revive(self) -> bool:
        """Restart the server if it died; True when it did (or another thread just did)."""
        with self._revive_lock:
            return self._revive()

    def _revive(self) -> bool:
        if self.alive():
            return False
        with open(self.log_path, "ab") as log:
            log.write(f"\n=== benchmark: server gone (exit {self.proc.returncode if self.proc else None}); "
                      f"restarting on the same data ===\n".encode())
        self.restarts += 1
        self.start()
        return True

    def stop(self) -> int | None:
        return stop(self.proc, self._stop_timeout_s) if self.proc is not None else None

    def kill(self, wait_s: float = 60.0) -> int | None:
        """SIGKILL the server's whole process group, no warning, and wait until it is gone
        (a large process takes a while to die: `revive()` right after a bare killpg can still
        see it alive and not restart it)."""
        if self.proc is None:
            return None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        return self.proc.wait(timeout=wait_s)

    def _wait_ready(self) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + self._ready_timeout_s
        last = "no answer yet"
        with httpx.Client(timeout=2.0, trust_env=False) as client:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise ServerError(f"codemem serve exited with {self.proc.returncode}:\n{self.log_tail()}")
                try:
                    r = client.get(self.url + "/health")
                    if r.status_code == 200:
                        body = r.json()
                        if body.get("model_loaded") or not self._need_model:
                            return
                        last = f"health {body}"
                    else:
                        last = f"HTTP {r.status_code}"
                except httpx.HTTPError as exc:
                    last = type(exc).__name__
                time.sleep(0.25)
        raise ServerError(f"codemem serve not ready after {self._ready_timeout_s:.0f} s ({last}):\n{self.log_tail()}")


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


_sigterms: list[float] = []


def shield_from_stray_sigterm() -> list[float]:
    """Keep a long benchmark alive through a stray SIGTERM (other sessions on this shared
    machine stop processes with broad `pkill`s, which twice ended a 40-minute run). The
    event is logged and counted (the returned list gets its time); stop the benchmark with
    Ctrl-C / SIGINT (clean shutdown of its server) or SIGKILL."""
    def note(signum: int, frame: object) -> None:
        _sigterms.append(time.time())
        print(f"[benchmark] ignored SIGTERM #{len(_sigterms)}; stop me with Ctrl-C (SIGINT)", file=sys.stderr, flush=True)

    signal.signal(signal.SIGTERM, note)
    return _sigterms


def use_source(source: str | os.PathLike[str] | None) -> None:
    """Make this process import the project from `source` (a snapshot) too, before any
    `codemem` import, so in-process steps match the server's code."""
    if source:
        root = str(Path(source).resolve())
        if root not in sys.path:
            sys.path.insert(0, root)
        for name in [m for m in sys.modules if m.split(".")[0] in ("codemem", "api", "parsers", "cli")]:
            del sys.modules[name]


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
    """Run `codemem serve` until the block ends; yields the `Server` (`.url`, `.pid`, ...).

    `env` adds/overrides environment variables for the server (inherited `CODEMEM_*`
    variables of this process are dropped first, so runs are reproducible). `source` runs
    the server from another copy of the project (a snapshot directory holding `codemem/`,
    `api/`, `parsers/`) instead of this checkout: it becomes the working directory and leads
    PYTHONPATH, ahead of the editable install. A temporary data directory is removed
    afterwards unless `keep_data`; a given one is never removed.
    """
    own_dir = data_dir is None
    ddir = tempfile.mkdtemp(prefix="cmbench-data-") if own_dir else str(data_dir)
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("CODEMEM_")}
    child_env.update(env or {})
    child_env.setdefault("PYTHONUNBUFFERED", "1")
    root = str(Path(source).resolve()) if source else str(REPO_ROOT)
    # The server runs the code of this checkout (or of `source`), whatever is installed.
    child_env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in child_env.get("PYTHONPATH", "").split(os.pathsep) if p])
    # Loopback only: keep any proxy settings away from the server too.
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        child_env.pop(var, None)
    log_file_path = log_path or os.path.join(tempfile.gettempdir(), f"cmbench-serve-{os.getpid()}-{time.time_ns()}.log")
    launch_dir = tempfile.mkdtemp(prefix="cmbench-")
    launcher = os.path.join(launch_dir, "bench_srv.py")
    with open(launcher, "w") as f:
        f.write(_LAUNCHER)
    srv = Server(ddir, child_env, dict(env or {}), root, launcher, log_file_path, ready_timeout_s, stop_timeout_s, need_model)
    try:
        srv.start()
        yield srv
    finally:
        srv.stop()
        if own_dir and not keep_data:
            shutil.rmtree(ddir, ignore_errors=True)
        shutil.rmtree(launch_dir, ignore_errors=True)


def post_retrying(client: httpx.Client, srv: Server, path: str, body: dict[str, object],
                  attempts: int = 3) -> tuple[httpx.Response, float]:
    """POST, and if the server died under the request, restart it and send it again (safe
    for Add: idempotent by request_id). Returns the response and the latency of the attempt
    that answered."""
    for attempt in range(attempts):
        t0 = time.perf_counter()
        try:
            r = client.post(srv.url + path, json=body)
            return r, time.perf_counter() - t0
        except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError):
            time.sleep(1.0)
            url = srv.url
            if not srv.revive() and srv.url == url and attempt == attempts - 1:
                raise
    raise ServerError(f"{path}: no answer after {attempts} attempts")


def proc_cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of a process (all its threads) so far; None if unreadable."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def group_cpu_s(pgid: int) -> float | None:
    """CPU seconds so far of the server's process group (its workers too, with --workers)."""
    total, found = 0.0, False
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[2]) != pgid:
                continue
        except (OSError, IndexError, ValueError):
            continue
        if (cpu := proc_cpu_s(int(stat.parent.name))) is not None:
            total, found = total + cpu, True
    return total if found else None


def log_size(srv: Server) -> int:
    """The size of the server's log so far: where `server_times` starts reading."""
    try:
        return os.path.getsize(srv.log_path)
    except OSError:
        return 0


def server_times(srv: Server, since: int) -> dict[str, dict[str, object]]:
    """The server's own time per answer (its access log, from `since` on) by route and status:
    what a client sees less the client's own delays, which with hundreds of connections in
    one Python process on 2 busy cores are a large part of the client-side figures."""
    times: dict[str, dict[str, list[float]]] = {}
    with open(srv.log_path, "rb") as f:
        f.seek(since)
        for line in f:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict) and entry.get("msg") == "request" and entry.get("route") in ("/add", "/search"):
                times.setdefault(entry["route"], {}).setdefault(str(entry["status"]), []).append(entry["ms"] / 1000)
    return {route: {status: summary_ms(v, 1) for status, v in sorted(by.items())} for route, by in sorted(times.items())}
