"""`codemem search` answers fast: through a running server over the same data directory
when there is one (cli/local_server.py), else with the packaged ONNX encoder and no torch
import."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from cli import local_server
from cli.main import main
from codemem.config import Settings
from codemem.contract.types import AddRequest, Message
from codemem.encoders import ShippedEmbedder
from codemem.memory import Memory
from tests.server import Server

ROOT = Path(__file__).resolve().parents[2]
HIT = {"id": "c_1", "content": "## Task\nFix the flaky cache test\n\n## Outcome\nfixed", "score": 0.5,
       "created_at": "2026-01-01T00:00:00.000Z", "session_id": "s-9",
       "metadata": {"kind": "card", "outcome": "fixed", "edited_files": ["tests/test_io.py"]}}


class _Fake(BaseHTTPRequestHandler):
    asked: list[dict[str, object]] = []

    def do_GET(self) -> None:  # noqa: N802 - the http.server interface
        self._reply(200, {"status": "ok"} if self.path == "/health" else {})

    def do_POST(self) -> None:  # noqa: N802
        _Fake.asked.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        self._reply(200, {"data": [HIT]})

    def _reply(self, status: int, body: dict[str, object]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def fake_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Fake)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_search_asks_the_server_that_announced_itself(tmp_path: Path, fake_server: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    settings = Settings().replace({"storage.data_dir": str(tmp_path / "data"), "server.port": int(fake_server.rsplit(":", 1)[1])})
    with local_server.announced(settings):
        assert local_server.running_server(settings.storage.data_dir) == fake_server
        assert main(["search", "--data-dir", settings.storage.data_dir, "--user-id", "dev", "flaky cache"]) == 0
    # Five shown; ten more asked for, to say how many more match (`codemem.compact.LOOKAHEAD`).
    assert _Fake.asked[-1] == {"user_id": "dev", "query": "flaky cache", "top_k": 15, "options": None}
    out = capsys.readouterr().out
    assert "#1  Fix the flaky cache test" in out and "edited: tests/test_io.py" in out
    assert not (tmp_path / "data" / local_server.FILE_NAME).exists()  # removed on shutdown


def test_the_command_prints_all_its_answer_and_a_closed_pipe_is_no_traceback(tmp_path: Path, fake_server: str) -> None:
    """`python -m cli` (as the console script) ends a search's process without the
    interpreter's teardown: its whole answer must still come out, and `| head` must not
    print a traceback."""
    settings = Settings().replace({"storage.data_dir": str(tmp_path / "data"), "server.port": int(fake_server.rsplit(":", 1)[1])})
    command = [sys.executable, "-m", "cli", "search", "--data-dir", settings.storage.data_dir, "--user-id", "dev", "flaky"]
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    with local_server.announced(settings):
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=120, env=env)
        closed = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=env)
        assert closed.stdout is not None and closed.stderr is not None
        closed.stdout.close()  # the reader goes before the answer comes
        err = closed.stderr.read().decode()
        assert closed.wait(timeout=120) == 1
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("1 result from the memory of dev:") and "edited: tests/test_io.py" in done.stdout
    assert "Traceback" not in err


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_a_server_stopped_cleanly_removes_its_file(tmp_path: Path, stop: signal.Signals) -> None:
    """uvicorn re-raises SIGTERM after its graceful shutdown: with SIGTERM's default action
    the process ended there, leaving a file that named a dead process."""
    server = Server(tmp_path / "data").start(wait_for_model=False)
    try:
        assert local_server.running_server(str(tmp_path / "data")) == server.url
        assert server.proc is not None
        server.proc.send_signal(stop)
        status = server.proc.wait(timeout=60)
    finally:
        server.kill()
    assert "Application shutdown complete" in server.log()
    assert status in (0, -signal.SIGTERM), server.log()[-2000:]  # SIGTERM's status is kept
    assert not (tmp_path / "data" / local_server.FILE_NAME).exists()


def test_a_stale_server_file_is_ignored(tmp_path: Path, fake_server: str) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (tmp_path / local_server.FILE_NAME).write_text(json.dumps({"url": fake_server, "pid": int(dead.stdout)}))
    assert local_server.running_server(str(tmp_path)) is None
    (tmp_path / local_server.FILE_NAME).write_text("not json")
    assert local_server.running_server(str(tmp_path)) is None


def test_cold_search_answers_with_no_torch(tmp_path: Path, embedder: ShippedEmbedder) -> None:
    data = str(tmp_path / "data")
    with Memory(Settings().replace({"storage.data_dir": data, "maintenance.interval_s": 0}), embedder=embedder) as m:
        m.add(AddRequest("r1", "dev", "sess-1", [Message("user", "Fix the IndexError in parse_hunk_header")]))
    probe = (f"import sys; from cli.main import main; main(['search', '--data-dir', {data!r}, '--user-id', 'dev', "
             "'--json', 'IndexError in parse_hunk_header']); print(sorted({'torch', 'transformers', "
             "'sentence_transformers'} & set(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env=os.environ | {"PYTHONPATH": str(ROOT)})
    out = done.stdout.splitlines()
    assert done.returncode == 0, done.stderr
    assert json.loads(out[0])["data"][0]["session_id"] == "sess-1"
    assert out[1] == "[]"
