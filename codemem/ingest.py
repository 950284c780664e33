"""Bulk importers: agent transcripts and git history, through the same path as an Add.

Each source becomes ordinary AddRequests handed to `Memory.add`, so what they store is
searchable over HTTP too, and re-running an import adds nothing twice: a commit's request
id is its sha, and a transcript adds only the messages after those its session already has
(a transcript only grows), so a longer transcript of a stored session adds just its new
tail and the session's experience is rebuilt with it.
"""

from __future__ import annotations

import subprocess
import tarfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

import msgspec
from tqdm import tqdm

from codemem.gitlog import CommitRecord, commit_to_experience, iter_commits
from codemem.memory import Memory
from codemem.models import AddRequest, Message
from codemem.transcripts import Transcript, iter_transcripts_from_tar, load_claude_code_jsonl

# A commit's diff is kept as its raw message up to this size; the card holds the trimmed view.
MAX_COMMIT_DIFF_CHARS = 20_000


class IngestReport(msgspec.Struct):
    sources: int = 0  # transcripts or commits read
    added: int = 0  # Add calls that stored something
    unchanged: int = 0  # commits stored before, transcripts with no new message
    messages: int = 0
    skipped_lines: int = 0  # transcript lines that did not parse
    empty: int = 0  # transcripts with no message
    skipped_where: list[str] = []  # "file:line" of the first lines that did not parse
    merges: int | None = None  # merge commits passed over (their changes are in the commits merged)


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
    """Each transcript's messages that its session does not hold yet."""
    report = IngestReport()
    files = list(transcript_paths(paths))
    total = None if any(tarfile.is_tarfile(p) for p in files) else len(files)  # an archive holds many
    bar = tqdm(desc="transcripts", unit="session", total=total, disable=not progress)
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
            _count(report, memory.add(req).duplicate, len(req.messages))
        bar.update(1)
    bar.close()
    return report


def commit_request(commit: CommitRecord, user_id: str) -> AddRequest:
    message = commit.message.strip() or f"(commit {commit.sha[:12]} has no message)"
    ts = int(commit.authored_at.timestamp() * 1000)
    messages = [Message(role="user", content=message, timestamp=ts)]
    if commit.diff.strip():
        messages.append(Message(role="assistant", content=commit.diff[:MAX_COMMIT_DIFF_CHARS], timestamp=ts))
    return AddRequest(request_id=f"git:{commit.sha}", user_id=user_id, session_id=f"git:{commit.sha}", messages=messages)


def ingest_git(
    memory: Memory,
    repo: str,
    user_id: str,
    since: datetime | None = None,
    max_commits: int | None = None,
    progress: bool = True,
    workers: int = 4,
) -> IngestReport:
    """One experience per commit. Commits are added concurrently so group commit joins them."""
    report = IngestReport()
    total, report.merges = _history_counts(repo, since)
    if max_commits is not None:
        total = max_commits if total is None else min(total, max_commits)
        report.merges = None  # counted over the whole range, not the newest max_commits
    bar = tqdm(desc="commits", unit="commit", total=total, disable=not progress)

    def add(commit: CommitRecord) -> tuple[bool, int]:
        req = commit_request(commit, user_id)
        return memory.add(req, experience=commit_to_experience(commit)).duplicate, len(req.messages)

    with ThreadPoolExecutor(workers) as pool:
        for duplicate, n in pool.map(add, iter_commits(repo, since=since, max_commits=max_commits)):
            report.sources += 1
            _count(report, duplicate, n)
            bar.update(1)
    bar.close()
    return report


def _history_counts(repo: str, since: datetime | None) -> tuple[int | None, int | None]:
    """The commits an import of HEAD reads, and the merges it passes over (None, None when
    git cannot say): a progress bar's total and ETA, and the summary's merge count."""
    window = [f"--since={since.isoformat()}"] if since is not None else []
    counts = []
    for kind in ("--no-merges", "--merges"):
        try:
            done = subprocess.run(["git", "-C", repo, "rev-list", "--count", kind, *window, "HEAD"],
                                  capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
            counts.append(int(done.stdout.strip()) if done.returncode == 0 else None)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            counts.append(None)
    return counts[0], counts[1]


def _count(report: IngestReport, duplicate: bool, messages: int) -> None:
    if duplicate:
        report.unchanged += 1
    else:
        report.added += 1
        report.messages += messages
