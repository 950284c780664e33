"""`codemem hook claude-code`: Claude Code's session transcripts, captured into the memory
of the repository each session worked in.

Claude Code runs a command hook with a JSON payload on stdin; SessionEnd, Stop and
PreCompact payloads name the session's `transcript_path`, `session_id` and `cwd`. A hook must
never get in the user's way: Claude Code gives all SessionEnd hooks 1.5 s unless their
`timeout` says more, and loading the embedding model alone takes longer. So the hook checks
the payload, hands the ingestion to a detached process and returns; `--wait` ingests in the
foreground instead. A bad payload is a one-line error on stderr and exit status 1, which
Claude Code shows and otherwise ignores (status 2 would make a Stop hook keep Claude going).

Ingestion is idempotent: only the messages after those the session already holds are added
(`codemem.importers.transcripts`), under request ids that name their message range, so a second run for
one session (a Stop, then SessionEnd) adds nothing twice. Runs also take turns on a file
lock, so they queue rather than compete for the CPU and the store.
"""

from __future__ import annotations

import fcntl
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import msgspec

from codemem.config import Settings, is_object_storage
from codemem.git.repo_id import repo_user_id

if TYPE_CHECKING:
    from codemem.encoders import Embedder
    from codemem.importers.report import IngestReport

STDIN_TIMEOUT_S = 10.0  # Claude Code writes the payload at once; a silent stdin is a mistake
MAX_PAYLOAD_BYTES = 1 << 20
LOCK_WAIT_S = 600.0  # a background run waits this long for the runs before it
MAX_LOG_BYTES = 1 << 20  # the background runs' log is started afresh past this size
NAME = "codemem hook claude-code"


class HookError(Exception):
    """The payload cannot be ingested; the message says why, for the user to read."""


class HookPayload(msgspec.Struct):
    """The fields of Claude Code's hook input that capture needs (others are ignored)."""

    transcript_path: str
    cwd: str
    session_id: str | None = None
    hook_event_name: str | None = None


def run_hook(settings: Settings, wait: bool, stdin: BinaryIO | None = None) -> int:
    """The command: 0 once the transcript is ingested (or handed to a background run), 1
    with a message on stderr when the payload is unusable or ingestion failed."""
    try:
        payload = parse_payload(read_payload(stdin or sys.stdin.buffer))
        if not wait:
            detach(settings, payload)
            return 0
        user_id, report = ingest(settings, payload)
    except (HookError, OSError) as exc:  # OSError: the data directory cannot be written
        print(f"{NAME}: {exc}", file=sys.stderr)
        return 1
    stamp = datetime.now().isoformat(timespec="seconds")
    print(f"{stamp} {payload.hook_event_name or 'hook'} session {payload.session_id}: "
          f"{report.messages} new messages in {report.added} chunks added to {user_id}"
          f"{' (nothing new)' if report.unchanged else ''}", flush=True)
    return 0


def read_payload(stream: BinaryIO, timeout_s: float = STDIN_TIMEOUT_S) -> bytes:
    """All of stdin, or HookError when it is a terminal, stays silent or is too large."""
    if stream.isatty():
        raise HookError("expects Claude Code's hook payload (JSON) on stdin; see the README's hook section")
    fd = stream.fileno()
    deadline = time.monotonic() + timeout_s
    chunks: list[bytes] = []
    size = 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise HookError(f"no end of input on stdin within {timeout_s:g} s")
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_PAYLOAD_BYTES:
            raise HookError(f"the payload on stdin is over {MAX_PAYLOAD_BYTES} bytes")
        chunks.append(chunk)


def parse_payload(raw: bytes) -> HookPayload:
    if not raw.strip():
        raise HookError("stdin is empty: expected Claude Code's hook payload (JSON)")
    try:
        payload = msgspec.json.decode(raw, type=HookPayload)
    except msgspec.ValidationError as exc:
        raise HookError(f"the payload is not a Claude Code hook input: {exc}") from None
    except msgspec.DecodeError as exc:
        raise HookError(f"the payload is not JSON: {exc}") from None
    path = Path(payload.transcript_path).expanduser()
    if not path.is_file():
        raise HookError(f"transcript_path {payload.transcript_path!r} is not a file")
    if not payload.cwd:
        raise HookError("cwd is empty: it names the repository whose memory gets the session")
    return msgspec.structs.replace(payload, transcript_path=str(path.resolve()))


def ingest(settings: Settings, payload: HookPayload, embedder: Embedder | None = None) -> tuple[str, IngestReport]:
    """Add the transcript's new messages to the memory of `cwd`'s repository."""
    from codemem.errors import CodememError
    from codemem.importers.transcripts import ingest_transcripts
    from codemem.memory import Memory

    user_id = repo_user_id(payload.cwd)
    with _turn(settings):
        try:
            memory = Memory(settings.replace({"maintenance.interval_s": 0}), embedder=embedder)
        except (CodememError, OSError) as exc:
            raise HookError(f"cannot open the memory at {settings.storage.data_dir}: {exc}") from exc
        try:
            report = ingest_transcripts(memory, [payload.transcript_path], user_id, progress=False)
            if report.added:
                # Each run adds a few fragments every search opens; no server may be running
                # to compact them.
                memory.compactor.run_once()
        except (CodememError, OSError) as exc:
            raise HookError(f"ingesting {payload.transcript_path} failed: {exc}") from exc
        finally:
            memory.close()
    return user_id, report


def detach(settings: Settings, payload: HookPayload) -> None:
    """Ingest in a process of its own that outlives this one (and Claude Code's budget);
    its output is appended to `hooks/claude-code.log` in the data directory."""
    log_path = _hook_dir(settings) / "claude-code.log"
    if log_path.exists() and log_path.stat().st_size > MAX_LOG_BYTES:
        os.replace(log_path, log_path.with_suffix(".log.1"))
    # -P: the hook runs in the user's repository, whose own `cli/`, `codemem/` or `integrations/`
    # folder must not shadow the installed packages.
    data_dir = settings.storage.data_dir if is_object_storage(settings.storage.data_dir) else os.path.abspath(settings.storage.data_dir)
    command = [sys.executable, "-P", "-m", "cli", "hook", "claude-code", "--wait", "--data-dir", data_dir]
    quiet = os.environ | {"TQDM_DISABLE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}  # a log, not a terminal
    with open(log_path, "ab") as log:
        child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=log, stderr=log, env=quiet,
                                 start_new_session=True, close_fds=True)
    assert child.stdin is not None
    child.stdin.write(msgspec.json.encode(payload))  # a few hundred bytes: the pipe takes them
    child.stdin.close()


def _hook_dir(settings: Settings) -> Path:
    """The hook's log and lock: beside the data, or in the user's state directory when the
    data is in object storage."""
    if is_object_storage(settings.storage.data_dir):
        state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
        path = Path(state) / "codemem" / "hooks"
    else:
        path = Path(settings.storage.data_dir).expanduser() / "hooks"
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextmanager
def _turn(settings: Settings) -> Iterator[None]:
    """One run at a time per data directory, across processes (an advisory file lock):
    sessions rarely end together, so taking turns costs little and keeps two model loads
    from competing for the CPU."""
    with open(_hook_dir(settings) / "claude-code.lock", "a") as handle:
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise HookError(f"other runs held {handle.name} for {LOCK_WAIT_S:g} s") from None
                time.sleep(0.2)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
