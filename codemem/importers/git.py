"""A git repository's history imported through Add: one experience per change of the
first-parent line (a merged pull request is one, with its branch's commits).

Each change becomes an ordinary AddRequest stored by `Memory.add_sessions`, so what it
stores is searchable over HTTP too, and re-running an import adds nothing twice: a commit's
request id is its sha, and changes stored before are not read again.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import itertools
import multiprocessing
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from datetime import datetime
from pathlib import Path

import numpy as np
from tqdm import tqdm

from codemem.contract.types import AddRequest, Message
from codemem.encoders import PackagedEmbedder
from codemem.experience.building.render import code_window
from codemem.experience.types import Experience
from codemem.git.cards import commit_to_experience
from codemem.git.log import commit_count, iter_changes, mainline_shas
from codemem.git.records import CommitRecord
from codemem.git.releases import Releases
from codemem.git.repo_id import git_top_level
from codemem.git.staleness import Staleness
from codemem.importers.report import IngestReport, compact_after, tally
from codemem.memory import Memory

# A commit's diff is kept as its raw message up to this size; the card holds the trimmed view.
MAX_COMMIT_DIFF_CHARS = 20_000
GIT_BATCH = 32  # changes stored per commit to the store
# A change's card embeds the opening of its title and message (64 tokens: the title and the
# first sentences say what the change is about; embedding is most of an import's CPU time).
GIT_EMBED_TOKENS = 64
_PROCESS_FROM = 200  # changes to import before a second process pays off its start-up
_CHUNK, _AHEAD = 16, 4  # changes per conversion task; tasks queued ahead of the consumer
# One conversion task in this many leaves its cards to be embedded here: reading and storing
# take this process a fraction of the converting one's parsing and embedding, so sharing the
# embedding keeps both cores busy.
_EMBED_HERE_EVERY = 3


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
    embedded, in a second process (with the same packaged encoder; this one embeds one chunk
    in ``_EMBED_HERE_EVERY``), so
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
    bar = tqdm(desc="commits", unit="commit", total=todo, disable=not progress or not todo)  # no bar for no work
    records = iter_changes(repo, since=since, max_commits=max_commits, known=known, skipped=report.skipped_commits)
    with contextlib.ExitStack() as stack:
        if todo >= _PROCESS_FROM:
            pool = stack.enter_context(ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")))
            # The packaged encoder this process uses, loaded from the same folder, gives the same vectors there.
            folder = memory.embedder.folder if isinstance(memory.embedder, PackagedEmbedder) else None
            window_tokens = memory.settings.embedding.code_window_tokens
            converted: Iterator[Converted] = _converted_aside(pool, records, folder, window_tokens)
        else:
            converted = ((c, commit_to_experience(c), {}) for c in records)
        pending: list[tuple[AddRequest, Experience]] = []
        embedded: dict[str, np.ndarray] = {}

        def flush() -> None:
            for result in memory.add_sessions(pending, embed_max_tokens=GIT_EMBED_TOKENS, embedded=embedded):
                report.sources += 1
                tally(report, result.duplicate, result.stored)
            bar.update(len(pending))
            pending.clear()
            embedded.clear()

        staleness = Staleness()
        releases = Releases.of_repo(repo)
        for commit, experience, vectors in converted:
            embedded.update(vectors)
            marked = releases.mark(staleness.mark(experience), commit.authored_at)
            pending.append((commit_request(commit, user_id), marked))
            report.merges += len(commit.parents) > 1
            if len(pending) >= batch:
                flush()
        if pending:
            flush()
    bar.close()
    compact_after(memory, report)
    return report


# A change, its experience, and its card's vectors where the converting process embedded them
# (by the text embedded: its task, and its code window for its second vector).
Converted = tuple[CommitRecord, Experience, dict[str, np.ndarray]]


def _embedded_text(experience: Experience) -> str:
    """What a change's card vector reads (``Memory.add_sessions`` embeds the same)."""
    return experience.card.task or experience.card.text


@functools.cache
def _aside_embedder(folder: Path) -> PackagedEmbedder:
    """The converting process's embedder of the packaged encoder in ``folder``, made on its first chunk."""
    return PackagedEmbedder(folder, threads=1)


def _convert_many(commits: list[CommitRecord], folder: Path | None, code_window_tokens: int) -> list[Converted]:
    """Experiences of ``commits``, and with an encoder's ``folder`` their cards' vectors (the
    task's, and with ``code_window_tokens`` the code window's), embedded by that encoder."""
    done = [(c, commit_to_experience(c)) for c in commits]
    if folder is None:
        return [(c, e, {}) for c, e in done]
    embedder = _aside_embedder(folder)
    tasks = embedder.embed([_embedded_text(e) for _, e in done], GIT_EMBED_TOKENS)
    windows = [code_window(e.card.text) if code_window_tokens else "" for _, e in done]
    shown = [w for w in windows if w]
    by_window = dict(zip(shown, embedder.embed(shown, code_window_tokens), strict=True)) if shown else {}
    return [(c, e, {_embedded_text(e): task} | ({w: by_window[w]} if w else {}))
            for (c, e), task, w in zip(done, tasks, windows, strict=True)]


def _converted_aside(pool: ProcessPoolExecutor, records: Iterator[CommitRecord], folder: Path | None,
                     code_window_tokens: int) -> Iterator[Converted]:
    """``records`` converted (and with an encoder's ``folder``, their cards embedded) in ``pool``, in
    order, a few chunks ahead of the consumer (not ``pool.map``, which reads the whole
    history into memory before the first result)."""
    ahead: collections.deque[Future[list[Converted]]] = collections.deque()
    for n in itertools.count():
        if not (chunk := list(itertools.islice(records, _CHUNK))):
            break
        ahead.append(pool.submit(_convert_many, chunk, folder if (n + 1) % _EMBED_HERE_EVERY != 0 else None, code_window_tokens))
        if len(ahead) > _AHEAD:
            yield from ahead.popleft().result()
    while ahead:
        yield from ahead.popleft().result()
