"""Bulk importers: agent transcripts and git history, through the same path as an Add.

Each source becomes ordinary AddRequests handed to `Memory.add`, so what they store is
searchable over HTTP too, and re-running an import adds nothing twice: a commit's request
id is its sha, and a transcript adds only the messages after those its session already has
(a transcript only grows), so a longer transcript of a stored session adds just its new
tail and the session's experience is rebuilt with it.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import itertools
import multiprocessing
import tarfile
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from datetime import datetime
from pathlib import Path

import msgspec
import numpy as np
from tqdm import tqdm

from codemem.embedding import MINILM_NAME, MiniLMEmbedder
from codemem.experience.types import Experience
from codemem.git.cards import commit_to_experience
from codemem.git.log import commit_count, iter_changes, mainline_shas
from codemem.git.records import CommitRecord
from codemem.git.releases import Releases
from codemem.git.repo_id import git_top_level
from codemem.git.staleness import Staleness
from codemem.memory import Memory
from codemem.models import AddRequest, Message
from codemem.transcripts import Transcript, iter_transcripts_from_tar, load_claude_code_jsonl

# A commit's diff is kept as its raw message up to this size; the card holds the trimmed view.
MAX_COMMIT_DIFF_CHARS = 20_000
GIT_BATCH = 32  # changes stored per commit to the store
# A change's card embeds the opening of its title and message (64 tokens: the title and the
# first sentences say what the change is about; embedding is most of an import's CPU time).
GIT_EMBED_TOKENS = 64
_PROCESS_FROM = 200  # changes to import before a second process pays off (it starts in ~2 s)
_CHUNK, _AHEAD = 16, 4  # changes per conversion task; tasks queued ahead of the consumer
# One conversion task in this many leaves its cards to be embedded here: reading and storing
# take this process about a third of the converting one's parsing and embedding (ripgrep,
# 2.2k changes: 9 s against ~35 s of CPU), so sharing the embedding keeps both cores busy.
_EMBED_HERE_EVERY = 3


class IngestReport(msgspec.Struct):
    sources: int = 0  # transcripts, or changes of a git history (a commit, or a merge with its branch), read
    commits: int = 0  # the commits those changes hold (a git history: merged branches' included)
    added: int = 0  # Add calls that stored something
    unchanged: int = 0  # commits stored before, transcripts with no new message
    messages: int = 0
    skipped_lines: int = 0  # transcript lines that did not parse
    empty: int = 0  # transcripts with no message
    skipped_where: list[str] = []  # "file:line" of the first lines that did not parse
    merges: int = 0  # merges read, each as one change with its branch's commits
    skipped_commits: list[str] = []  # changes git could not read (a missing object), skipped

    def changes_read(self) -> str:
        """What a git import read, for a person: its changes, and the commits they hold
        where merges make the two differ ("2,261 changes of 5,531 commits": the first-parent
        line, each merge one change with the commits it brought in)."""
        if self.commits > self.sources + len(self.skipped_commits):
            merges = f"{_count_of(self.merges, 'merge')}, each" if self.merges else "each merge"
            return (f"{_count_of(self.sources, 'change')} of {_count_of(self.commits, 'commit')} (the "
                    f"first-parent line: {merges} one change with the commits it brought in)")
        return _count_of(self.sources, "commit")


def _count_of(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


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
    _compact_after(memory, report)
    return report


def _compact_after(memory: Memory, report: IngestReport) -> None:
    """One compaction at the end of an import that added anything: a CLI or eval Memory runs
    no compactor thread, and a store left with a fragment per Add or batch and an unindexed
    tail makes every later Search scan them."""
    if report.added:
        memory.compactor.run_once()


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
    batch: int = GIT_BATCH,
) -> IngestReport:
    """One experience per change of the first-parent line (a merged pull request is one,
    with its branch's commits). Changes stored before are not read again, so a re-run adds
    only new commits. A change whose code a later change edited says so on its card
    (``codemem.git.staleness``); each names the release it came after (``codemem.git.releases``).
    The store is compacted (and its indexes brought up to date) once at the end, so the
    first Search after an import does not scan a fragment per batch.

    Changes are stored ``batch`` at a time (one look-up, one embedding batch, one commit;
    ``Memory.add_sessions``); a long history is turned into experiences, and their cards
    embedded, in a second process (where this one embeds with the checked ONNX encoder, which
    that process loads from its cache; this one embeds one chunk in ``_EMBED_HERE_EVERY``), so
    reading, parsing, embedding and storing keep two cores busy.

    ``repo`` may be any directory inside the work tree: its top level is imported
    (``ValueError`` outside git).
    """
    top = git_top_level(repo)
    if top is None:
        raise ValueError(f"not a git repository (nor inside one): {repo!r}")
    repo = top
    report = IngestReport()
    line = mainline_shas(repo, since=since, max_commits=max_commits)
    report.commits = commit_count(repo, since=since, max_commits=max_commits) if line else 0
    known = {sid.removeprefix("git:") for sid in memory.session_ids(user_id, "git:")}
    report.unchanged = sum(1 for sha in line if sha in known)
    report.sources = report.unchanged
    todo = len(line) - report.unchanged
    bar = tqdm(desc="commits", unit="commit", total=todo, disable=not progress)
    records = iter_changes(repo, since=since, max_commits=max_commits, known=known, skipped=report.skipped_commits)
    with contextlib.ExitStack() as stack:
        if todo >= _PROCESS_FROM:
            pool = stack.enter_context(ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")))
            # The checked ONNX encoder this process uses, cached, gives the same vectors there.
            embed_aside = memory.embedder.name == MINILM_NAME and memory.embedder.query_path == "onnx"
            converted: Iterator[Converted] = _converted_aside(pool, records, embed_aside)
        else:
            converted = ((c, commit_to_experience(c), None) for c in records)
        pending: list[tuple[AddRequest, Experience]] = []
        embedded: dict[str, np.ndarray] = {}

        def flush() -> None:
            for result in memory.add_sessions(pending, embed_max_tokens=GIT_EMBED_TOKENS, embedded=embedded):
                report.sources += 1
                _count(report, result.duplicate, result.stored)
            bar.update(len(pending))
            pending.clear()
            embedded.clear()

        staleness = Staleness()
        releases = Releases.of_repo(repo)
        for commit, experience, vector in converted:
            if vector is not None:
                embedded[_embedded_text(experience)] = vector
            marked = releases.mark(staleness.mark(experience), commit.authored_at)
            pending.append((commit_request(commit, user_id), marked))
            report.merges += len(commit.parents) > 1
            if len(pending) >= batch:
                flush()
        if pending:
            flush()
    bar.close()
    _compact_after(memory, report)
    return report


# A change, its experience, and its card's vector where the converting process embedded it.
Converted = tuple[CommitRecord, Experience, "np.ndarray | None"]


def _embedded_text(experience: Experience) -> str:
    """What a change's card vector reads (``Memory.add_sessions`` embeds the same)."""
    return experience.card.task or experience.card.text


@functools.cache
def _aside_embedder() -> MiniLMEmbedder:
    """The converting process's embedder, made on its first chunk."""
    return MiniLMEmbedder(threads=1)


def _convert_many(commits: list[CommitRecord], embed: bool) -> list[Converted]:
    """Experiences of ``commits``, and with ``embed`` their cards' vectors, embedded by the
    cached ONNX encoder (no torch in this process; none where no encoder is cached)."""
    done = [(c, commit_to_experience(c)) for c in commits]
    vectors: list[np.ndarray | None] = [None] * len(done)
    if embed and _aside_embedder().warm_queries():
        vectors = list(_aside_embedder().embed([_embedded_text(e) for _, e in done], GIT_EMBED_TOKENS))
    return [(c, e, v) for (c, e), v in zip(done, vectors, strict=True)]


def _converted_aside(pool: ProcessPoolExecutor, records: Iterator[CommitRecord], embed: bool) -> Iterator[Converted]:
    """``records`` converted (and with ``embed``, their cards embedded) in ``pool``, in
    order, a few chunks ahead of the consumer (not ``pool.map``, which reads the whole
    history into memory before the first result)."""
    ahead: collections.deque[Future[list[Converted]]] = collections.deque()
    for n in itertools.count():
        if not (chunk := list(itertools.islice(records, _CHUNK))):
            break
        ahead.append(pool.submit(_convert_many, chunk, embed and (n + 1) % _EMBED_HERE_EVERY != 0))
        if len(ahead) > _AHEAD:
            yield from ahead.popleft().result()
    while ahead:
        yield from ahead.popleft().result()


def _count(report: IngestReport, duplicate: bool, messages: int) -> None:
    if duplicate:
        report.unchanged += 1
    else:
        report.added += 1
        report.messages += messages
