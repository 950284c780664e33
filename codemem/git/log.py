"""A repository's history as git walks it: the changes to import, newest first.

Two walks: ``iter_commits`` reads every non-merge commit (``--no-merges``); ``iter_changes``,
what the importer uses, reads the first-parent line, where a merged pull request is one change
(the merge's diff against its first parent, with its branch's commits and messages) and a
squashed one is one commit, so an experience is a fix as people think of it. Each walk is one
streamed ``git log`` (``codemem.git.records``); a commit whose git objects are missing is
skipped, not the walk.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Container, Iterator
from dataclasses import replace
from datetime import UTC, datetime

import git

from codemem.git.records import LOG_FORMAT, MAX_BRANCH, MAX_DIFF_BYTES, CommitRecord, stream_log

__all__ = ["commit_count", "iter_changes", "iter_commits", "mainline_shas"]

log = logging.getLogger(__name__)

# What git says when a commit needs an object the repository lacks (a broken or partial
# clone): that commit is skipped, not the whole walk.
_MISSING_OBJECT = re.compile(
    r"unable to read|bad object|missing (?:blob|tree|commit)|is corrupt|could not read|did not receive expected object"
)

_READ_ALONE = 64  # new changes not on top of the known ones, up to which each is read alone


def _log_options(*merges: str) -> list[str]:
    """The options of every history read: our record format, and each commit's changed files
    and patch with renames found, in git's plain form whatever the user's configuration says
    (no colour, external diff, text conversion or relative paths; ``a/`` and ``b/`` prefixes);
    `merges` says how merges are walked."""
    return [
        f"--format={LOG_FORMAT}",
        "--encoding=UTF-8",
        *merges,
        "--raw", "-p",
        "-M",
        "--no-color", "--no-ext-diff", "--no-textconv", "--no-relative",
        "--src-prefix=a/", "--dst-prefix=b/",
        "--submodule=short",
    ]  # fmt: skip


def iter_commits(
    repo_path: str,
    since: datetime | None = None,
    max_commits: int | None = None,
    branch: str | None = None,
    *,
    max_diff_bytes: int = MAX_DIFF_BYTES,
) -> Iterator[CommitRecord]:
    """Yield the commits reachable from ``branch`` (default HEAD), newest first, merges skipped.

    ``since`` compares with the committer date, as ``git log --since`` does (a naive datetime
    is taken as UTC). Raises ``ValueError`` at call time, before any iteration, when
    ``repo_path`` is not a git repository or ``branch`` does not name a commit; an empty
    repository yields nothing. Closing the iterator early stops the underlying git process.
    """
    opened = _open_at_tip(repo_path, branch, max_commits)
    if opened is None:
        return iter(())
    repo, tip = opened
    args = ["log", tip, *_log_options("--no-merges"), *_window(since, max_commits)]
    return stream_log(repo, args, max_diff_bytes)


def iter_changes(
    repo_path: str,
    since: datetime | None = None,
    max_commits: int | None = None,
    branch: str | None = None,
    *,
    known: Container[str] = (),
    max_diff_bytes: int = MAX_DIFF_BYTES,
    skipped: list[str] | None = None,
) -> Iterator[CommitRecord]:
    """Yield the changes of ``branch``'s first-parent line (default HEAD), newest first: each
    direct or squashed commit, and each merge with its diff against the first parent and the
    commits it brought in (``branch``), so a merged pull request is one change.

    Commits whose sha is in ``known`` are not read again (an incremental import): when none
    is new, no diff is computed at all. A change whose diff needs a git object the repository
    lacks is skipped with a warning naming it (and its sha appended to ``skipped``); the walk
    goes on after it. Other errors as ``iter_commits``.
    """
    opened = _open_at_tip(repo_path, branch, max_commits)
    if opened is None:
        return iter(())
    repo, tip = opened
    window = _window(since, max_commits)
    mainline = str(repo.git.rev_list("--first-parent", *window, tip)).split()
    new = [sha for sha in mainline if sha not in known]
    if not new:
        repo.close()
        return iter(())
    walk = [tip, *window]
    on_top = len(new) < len(mainline) and new == mainline[: len(new)]
    if on_top:
        walk = [tip, f"^{mainline[len(new)]}"]  # the usual re-run: new commits on top
    merges = _branch_commits(repo, tip, str(repo.git.rev_list("--first-parent", tip)).split())
    options = _log_options("--first-parent", "--diff-merges=first-parent")
    wanted = set(new)
    misses = skipped if skipped is not None else []
    if on_top or len(new) == len(mainline) or len(new) > _READ_ALONE:
        records = _walk_past_missing(repo, walk, options, mainline, max_diff_bytes, misses)
    else:  # a few new changes scattered down the line (e.g. ones skipped before): each read alone
        records = _read_each(repo, new, options, max_diff_bytes, misses)
    return (replace(rec, branch=merges.get(rec.sha, ())) for rec in records if rec.sha in wanted)


def _read_each(repo: git.Repo, shas: list[str], options: list[str], max_diff_bytes: int,
               skipped: list[str]) -> Iterator[CommitRecord]:
    """Each of ``shas`` read alone; one git cannot read is skipped (warned, in ``skipped``)."""
    for sha in shas:
        rec = _read_one(repo, options, sha, max_diff_bytes)
        if rec is None:
            _skip(sha, "missing object", skipped)
        else:
            yield rec


def _skip(sha: str, reason: str, skipped: list[str]) -> None:
    log.warning("skipped change %s: a git object it needs is missing (%s)", sha[:12], reason)
    skipped.append(sha)


def _walk_past_missing(repo: git.Repo, walk: list[str], options: list[str], mainline: list[str],
                       max_diff_bytes: int, skipped: list[str]) -> Iterator[CommitRecord]:
    """``git log <walk> <options>`` read by ``stream_log``; where git stops at a commit whose
    object is missing, that commit is skipped (warned, appended to ``skipped``) and the walk
    resumes from the next mainline commit. A record is held back until the next one starts:
    the one git was writing when it failed may be cut short, so it is read again alone and
    kept if that works."""
    order = {sha: i for i, sha in enumerate(mainline)}
    while True:
        held: CommitRecord | None = None
        try:
            for rec in stream_log(repo, ["log", *walk, *options], max_diff_bytes):
                if held is not None:
                    yield held
                held = rec
            if held is not None:
                yield held
            return
        except git.GitCommandError as exc:
            if not _MISSING_OBJECT.search(str(exc.stderr)):
                raise
            failed = _next_unread(held, walk[0], order, mainline)
            if held is not None:
                alone = _read_one(repo, options, held.sha, max_diff_bytes)
                if alone is not None:
                    yield alone
                    failed = _next_unread(alone, walk[0], order, mainline)
                else:
                    failed = held.sha
            if failed is None:
                return
            said = _MISSING_OBJECT.search(str(exc.stderr))
            reason = str(exc.stderr)[said.start():].splitlines()[0].rstrip("'") if said else "missing object"
            _skip(failed, reason, skipped)
            following = order.get(failed, len(mainline)) + 1
            if following >= len(mainline):
                return
            walk = [mainline[following], *walk[1:]]


def _next_unread(last: CommitRecord | None, start: str, order: dict[str, int], mainline: list[str]) -> str | None:
    """The mainline commit after ``last`` (the walk's start when nothing was read)."""
    if last is None:
        return start if start in order else None
    i = order.get(last.sha, len(mainline)) + 1
    return mainline[i] if i < len(mainline) else None


def _read_one(repo: git.Repo, options: list[str], sha: str, max_diff_bytes: int) -> CommitRecord | None:
    """One commit read alone with the walk's options; None when git cannot read it either."""
    try:
        records = list(stream_log(repo, ["log", "-1", *options, sha], max_diff_bytes))  # to git's exit status
    except git.GitCommandError as exc:
        if not _MISSING_OBJECT.search(str(exc.stderr)):
            raise
        return None
    return records[0] if records else None


def mainline_shas(
    repo_path: str, since: datetime | None = None, max_commits: int | None = None, branch: str | None = None
) -> list[str]:
    """The shas ``iter_changes`` walks (known ones included), newest first."""
    opened = _open_at_tip(repo_path, branch, max_commits)
    if opened is None:
        return []
    repo, tip = opened
    try:
        return str(repo.git.rev_list("--first-parent", *_window(since, max_commits), tip)).split()
    finally:
        repo.close()


def commit_count(
    repo_path: str, since: datetime | None = None, max_commits: int | None = None, branch: str | None = None
) -> int:
    """How many commits the changes of ``mainline_shas`` hold: the first-parent line's own
    and those its merges brought in (every commit reachable from the tip within ``since``,
    down to the first parent of the oldest change when ``max_commits`` cuts the line)."""
    opened = _open_at_tip(repo_path, branch, max_commits)
    if opened is None:
        return 0
    repo, tip = opened
    try:
        walk = [tip, *_window(since, None)]
        if max_commits is not None:
            line = str(repo.git.rev_list("--first-parent", f"--max-count={max_commits + 1}", tip)).split()
            if len(line) > max_commits:
                walk.append(f"^{line[max_commits]}")
        return int(repo.git.rev_list("--count", *walk))
    finally:
        repo.close()


def _open_at_tip(repo_path: str, branch: str | None, max_commits: int | None) -> tuple[git.Repo, str] | None:
    """The open repository and the commit ``branch`` names (default HEAD); None (closed)
    for an empty repository or ``max_commits`` <= 0. ``ValueError`` (closed) when
    ``repo_path`` is not a repository or ``branch`` names no commit."""
    repo = _open_repo(repo_path)
    try:
        tip = _resolve_tip(repo, branch)
    except ValueError:
        repo.close()
        raise
    if tip is None or (max_commits is not None and max_commits <= 0):
        repo.close()
        return None
    return repo, tip


def _window(since: datetime | None, max_commits: int | None) -> list[str]:
    window = []
    if since is not None:
        when = since if since.tzinfo is not None else since.replace(tzinfo=UTC)
        window.append(f"--since={when.astimezone(UTC).isoformat()}")
    if max_commits is not None:
        window.append(f"--max-count={max_commits}")
    return window


def _branch_commits(repo: git.Repo, tip: str, mainline: list[str]) -> dict[str, tuple[tuple[str, str], ...]]:
    """Each mainline merge's branch: from its second parent along first parents until the
    mainline, a commit an earlier merge brought in, or ``MAX_BRANCH`` commits, as
    (sha, message), newest first. One ``git log`` without diffs."""
    out = str(repo.git.log(tip, "--format=%H%x00%P%x00%B%x1e", "--encoding=UTF-8"))
    parents: dict[str, list[str]] = {}
    messages: dict[str, str] = {}
    for entry in out.split("\x1e"):
        fields = entry.strip("\n").split("\x00", 2)
        if len(fields) == 3:
            parents[fields[0]] = fields[1].split()
            messages[fields[0]] = fields[2].strip()
    result: dict[str, tuple[tuple[str, str], ...]] = {}
    claimed = set(mainline)
    for sha in reversed(mainline):  # oldest first: a branch merged twice is claimed once
        ps = parents.get(sha, [])
        if len(ps) < 2:
            continue
        chain: list[tuple[str, str]] = []
        for side in ps[1:]:
            cur: str | None = side
            while cur and cur not in claimed and len(chain) < MAX_BRANCH:
                claimed.add(cur)
                chain.append((cur, messages.get(cur, "")))
                nxt = parents.get(cur, [])
                cur = nxt[0] if nxt else None
        result[sha] = tuple(chain)
    return result


def _open_repo(repo_path: str) -> git.Repo:
    try:
        return git.Repo(os.path.expanduser(repo_path))
    except git.NoSuchPathError as exc:
        raise ValueError(f"not a git repository: {repo_path!r} does not exist") from exc
    except git.InvalidGitRepositoryError as exc:
        raise ValueError(
            f"not a git repository: {repo_path!r} (give the repository's top-level directory)"
        ) from exc


def _resolve_tip(repo: git.Repo, branch: str | None) -> str | None:
    """The commit sha to walk from; None for an empty repository (unborn HEAD)."""
    if branch is None:
        if not repo.head.is_valid():
            return None
        return repo.head.commit.hexsha
    try:
        sha = repo.git.rev_parse("--verify", "--quiet", "--end-of-options", f"{branch}^{{commit}}")
    except git.GitCommandError as exc:
        raise ValueError(f"branch or revision {branch!r} not found in {repo.git_dir!r}") from exc
    return str(sha)
