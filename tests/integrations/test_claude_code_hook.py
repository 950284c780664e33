"""`codemem hook claude-code`: a real Claude Code transcript lands once in its repository's
memory, a longer transcript of the session adds only its tail, and bad input fails fast."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import git
import pytest

from codemem.config import Settings
from codemem.encoders import ShippedEmbedder
from codemem.importers.claude_code import load_claude_code_jsonl
from codemem.memory import Memory
from codemem.store.schema import key_of
from integrations.claude_code_hook import HookError, ingest, parse_payload
from tests.conftest import needs_swe_lite as needs_data

ROOT = Path(__file__).resolve().parents[2]
SESSION = "02288eb6-b08e-4b1c-9d29-b4abad2be12f"  # django__django-12915
EARLY_LINES = 40  # the session before its edit of django/contrib/staticfiles/handlers.py
USER = "repo:github.com/acme/django-fork"


@pytest.fixture(scope="module")
def transcripts(tmp_path_factory: pytest.TempPathFactory, swe_lite_tar: Path) -> tuple[Path, Path]:
    """One real transcript, and the same session as Claude Code had written it earlier on."""
    out = tmp_path_factory.mktemp("claude")
    with tarfile.open(swe_lite_tar) as tar:
        member = next(m for m in tar if m.name.endswith(f"{SESSION[:8]}.jsonl"))
        data = tar.extractfile(member).read()  # type: ignore[union-attr]
    full, early = out / f"{SESSION}.jsonl", out / "early" / f"{SESSION}.jsonl"
    early.parent.mkdir()
    full.write_bytes(data)
    early.write_bytes(b"".join(data.splitlines(keepends=True)[:EARLY_LINES]))
    return early, full


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = git.Repo.init(tmp_path / "django-fork")
    repo.create_remote("origin", "https://github.com/acme/django-fork.git")
    return tmp_path / "django-fork"


def _payload(transcript: Path, cwd: Path, event: str = "SessionEnd") -> bytes:
    return json.dumps({
        "session_id": SESSION, "transcript_path": str(transcript), "cwd": str(cwd),
        "hook_event_name": event, "reason": "other", "permission_mode": "default",
    }).encode()


def _card(memory: Memory) -> dict:
    cards = memory.store.rows(f"user_key = '{key_of(USER)}' AND kind = 'card'")
    assert len(cards) == 1
    return cards[0]


@needs_data
def test_a_transcript_is_stored_once_and_its_longer_version_adds_only_the_tail(
    settings: Settings, embedder: ShippedEmbedder, transcripts: tuple[Path, Path], repo: Path
) -> None:
    early, full = transcripts
    n_early, n_full = len(load_claude_code_jsonl(early).messages), len(load_claude_code_jsonl(full).messages)
    assert 0 < n_early < n_full

    user, first = ingest(settings, parse_payload(_payload(early, repo, "Stop")), embedder=embedder)
    assert user == USER and first.messages == n_early and first.added >= 1
    with Memory(settings, embedder=embedder) as m:
        rows, card = m.store.count(), _card(m)
        assert m.message_count(USER, SESSION) == n_early
    assert "django/contrib/staticfiles/handlers.py" not in json.loads(card["metadata"])["edited_files"]

    _, again = ingest(settings, parse_payload(_payload(early, repo, "Stop")), embedder=embedder)
    assert (again.added, again.messages, again.unchanged) == (0, 0, 1)
    with Memory(settings, embedder=embedder) as m:
        assert m.store.count() == rows

    _, grown = ingest(settings, parse_payload(_payload(full, repo)), embedder=embedder)
    assert grown.messages == n_full - n_early
    with Memory(settings, embedder=embedder) as m:
        assert m.message_count(USER, SESSION) == n_full
        card = _card(m)  # the same experience, rebuilt from the whole session
        assert json.loads(card["metadata"])["messages"] == n_full
        assert "django/contrib/staticfiles/handlers.py" in json.loads(card["metadata"])["edited_files"]
        rows = m.store.count()
        # The whole experience opens by session id: the card, then its steps in order.
        whole = m.experience(USER, SESSION)
    assert whole[0].id == card["id"] and all(h.metadata["kind"] == "step" for h in whole[1:])
    positions = [h.metadata["position"] for h in whole[1:]]
    assert len(positions) > 1 and positions == sorted(positions)

    _, last = ingest(settings, parse_payload(_payload(full, repo)), embedder=embedder)
    assert (last.added, last.messages) == (0, 0)
    with Memory(settings, embedder=embedder) as m:
        assert m.store.count() == rows


# What makes a process slow to start: the store and the embedding model. The hook must
# return without them (README: within a fraction of a second; Claude Code gives SessionEnd
# hooks 1.5 s), so `_hook` runs the CLI and prints, on exit, which of them it imported.
HEAVY = ("lancedb", "torch", "sentence_transformers", "onnxruntime")
_PROBE = (
    "import atexit, runpy, sys\n"
    f"atexit.register(lambda: print('imported:', *[m for m in {HEAVY!r} if m in sys.modules]))\n"
    "sys.argv = ['cli', *sys.argv[1:]]\n"
    "runpy.run_module('cli', run_name='__main__', alter_sys=True)\n"
)


def _heavy_imports(done: subprocess.CompletedProcess[bytes]) -> list[str]:
    lines = [line for line in done.stdout.decode().splitlines() if line.startswith("imported:")]
    assert lines, done.stdout.decode()
    return lines[-1].split()[1:]


def _hook(stdin: bytes, *args: str, data_dir: Path, timeout: float = 30) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-c", _PROBE, "hook", "claude-code", "--data-dir", str(data_dir), *args],
        input=stdin, capture_output=True, timeout=timeout, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


@pytest.mark.parametrize("stdin, reason", [
    (b"", "stdin is empty"),
    (b"not json", "not JSON"),
    (b'{"cwd": "/tmp"}', "missing required field `transcript_path`"),
    (b'{"cwd": "/tmp", "transcript_path": "/no/such/transcript.jsonl"}', "is not a file"),
    (b'{"cwd": 7, "transcript_path": "/tmp"}', "Expected `str`"),
])
def test_bad_input_fails_at_once_with_a_reason_and_a_non_blocking_status(tmp_path: Path, stdin: bytes, reason: str) -> None:
    done = _hook(stdin, data_dir=tmp_path / "data")
    # 1, never 2: Claude Code shows the message, and a Stop hook does not keep Claude going.
    assert done.returncode == 1
    assert reason in done.stderr.decode() and done.stderr.decode().startswith("codemem hook claude-code: ")
    assert _heavy_imports(done) == []  # no model, no store: the interpreter's start-up alone
    assert not (tmp_path / "data").exists()


def test_the_transcript_must_be_a_file(tmp_path: Path) -> None:
    with pytest.raises(HookError, match="is not a file"):
        parse_payload(_payload(tmp_path, tmp_path))


@needs_data
def test_by_default_the_hook_returns_at_once_and_ingests_in_the_background(
    tmp_path: Path, transcripts: tuple[Path, Path], repo: Path, embedder: ShippedEmbedder
) -> None:
    early, _ = transcripts
    data = tmp_path / "data"
    done = _hook(_payload(early, repo), data_dir=data)
    assert done.returncode == 0, done.stderr.decode()
    assert _heavy_imports(done) == []  # the model and the store load in the detached process
    log = data / "hooks" / "claude-code.log"
    assert f"added to {USER}" not in (log.read_text() if log.exists() else "")  # not done before returning
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and f"added to {USER}" not in (log.read_text() if log.exists() else ""):
        time.sleep(0.5)
    assert f"new messages in 1 chunks added to {USER}" in log.read_text(), log.read_text()
    with Memory(Settings().replace({"storage.data_dir": str(data), "maintenance.interval_s": 0}), embedder=embedder) as m:
        assert m.message_count(USER, SESSION) == len(load_claude_code_jsonl(early).messages)
