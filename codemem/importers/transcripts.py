"""Claude Code transcripts imported through Add: each transcript's messages that its session
does not hold yet, in chunks whose request ids name their message range, so re-running an
import adds nothing twice and a longer transcript of a stored session adds just its new tail.
"""

from __future__ import annotations

import tarfile
from collections.abc import Iterator
from pathlib import Path

from tqdm import tqdm

from codemem.contract.types import AddRequest
from codemem.importers.claude_code import (
    Transcript,
    iter_transcripts_from_tar,
    load_claude_code_jsonl,
)
from codemem.importers.report import IngestReport, compact_after, tally
from codemem.memory import Memory


def transcript_paths(paths: list[str]) -> Iterator[Path]:
    """Files named, `*.jsonl` under directories named, and `.tar.xz`/`.tar.gz` archives."""
    for raw in paths:
        p = Path(raw).expanduser()
        if p.is_dir():
            yield from sorted(p.rglob("*.jsonl"))
        elif p.exists():
            yield p
        else:
            raise FileNotFoundError(f"no such file or directory: {raw}")


def iter_transcripts(paths: list[str]) -> Iterator[tuple[str, Transcript]]:
    for p in transcript_paths(paths):
        if tarfile.is_tarfile(p):
            yield from iter_transcripts_from_tar(p)
        else:
            yield str(p), load_claude_code_jsonl(p)


def transcript_session_id(name: str, t: Transcript) -> str:
    """The transcript's own session id, else its file name (Claude Code names files by it)."""
    return t.session_id or Path(name).stem


def transcript_requests(name: str, t: Transcript, user_id: str, chunk: int, start: int = 0) -> list[AddRequest]:
    """The transcript's messages from `start` on as Add chunks of `chunk` messages; each
    request id names its absolute message range, so it is stable across re-runs."""
    session_id = transcript_session_id(name, t)
    out = []
    for begin in range(start, len(t.messages), chunk):
        part = t.messages[begin : begin + chunk]
        request_id = f"transcript:{session_id}:{begin}-{begin + len(part)}"
        out.append(AddRequest(request_id=request_id, user_id=user_id, session_id=session_id, messages=part))
    return out


def ingest_transcripts(memory: Memory, paths: list[str], user_id: str, chunk: int = 50, progress: bool = True) -> IngestReport:
    """Each transcript's messages that its session does not hold yet; the store is compacted
    once at the end, as after `ingest_git`."""
    report = IngestReport()
    files = list(transcript_paths(paths))
    total = None if any(tarfile.is_tarfile(p) for p in files) else len(files)  # an archive holds many
    bar = tqdm(desc="transcripts", unit="session", total=total, disable=not progress or not files)
    for name, transcript in iter_transcripts(paths):
        report.sources += 1
        report.skipped_lines += transcript.skipped_lines
        report.skipped_where.extend(f"{name}:{n}" for n in transcript.skipped_at[: max(0, 10 - len(report.skipped_where))])
        if not transcript.messages:
            report.empty += 1
        stored = memory.message_count(user_id, transcript_session_id(name, transcript))
        requests = transcript_requests(name, transcript, user_id, chunk, start=stored)
        if transcript.messages and not requests:
            report.unchanged += 1
        for req in requests:
            tally(report, memory.add(req).duplicate, len(req.messages))
        bar.update(1)
    bar.close()
    compact_after(memory, report)
    return report
