"""Git history importer: a repository's commits become experiences ("how did we fix X before?").

Reading is one streamed ``git log --raw -p`` for the whole range, split on sentinel
bytes, because one git process per commit is what makes naive importers take minutes on a few
thousand commits. Every commit's diff is bounded (per file and in total) so a vendored or
generated commit cannot blow up memory or the card.

Hunk headers come from git's language-aware funcname drivers (``diff=python``, ``golang``,
``java``... plus a JS/TS pattern of ours), passed as a fallback attributes file that the
repository's own ``.gitattributes`` still override. Git's default picks the nearest unindented
line, i.e. the *class* for any method edit; the drivers name the method, which is what
``parsers.parse_diff`` resolves symbols from when it only has the hunks.

Two walks: ``iter_commits`` reads every non-merge commit (``--no-merges``); ``iter_changes``,
what the importer uses, reads the first-parent line, where a merged pull request is one change
(the merge's diff against its first parent, with its branch's commits and messages) and a
squashed one is one commit, so an experience is a fix as people think of it.
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
import threading
from collections.abc import Container, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import partial
from typing import IO

import git
import msgspec

import parsers
from codemem.clip import clip
from codemem.experience.building.render import render_card
from codemem.experience.types import Experience, ExperienceCard, StepRecord
from codemem.git.facts import change_facts
from parsers.types import CodeRefs, DiffFile, unique

__all__ = [
    "ATTRIBUTES",
    "JS_FUNCNAME",
    "MAX_DIFF_BYTES",
    "MAX_FILE_DIFF_BYTES",
    "CommitRecord",
    "commit_to_experience",
    "iter_changes",
    "iter_commits",
    "mainline_shas",
]

MAX_DIFF_BYTES = 200_000  # kept of one commit's patch
MAX_FILE_DIFF_BYTES = 50_000  # kept of one file's patch, so one lockfile cannot use it all
_MAX_RECORD_BYTES = 4 << 20  # read of one commit (message + file list + patch) before skipping
_CHUNK = 1 << 20
_STDERR_KEEP = 8_192

# Sentinels around each commit's header; NUL never occurs in a message or a textual patch.
_START = b"\x00\x1ecodemem\x1f"
_END = b"\x00\x1e/codemem\x1f"
_FORMAT = "%x00%x1ecodemem%x1f%H%x00%P%x00%an%x00%at%x00%B%x00%x1e/codemem%x1f"
_FILE_SEP = b"\ndiff --git "

# Built-in git funcname drivers by file suffix; unknown drivers fall back to git's default.
_DRIVERS: dict[str, tuple[str, ...]] = {
    "python": ("py", "pyi", "pyw"),
    "golang": ("go",),
    "rust": ("rs",),
    "java": ("java",),
    "kotlin": ("kt", "kts"),
    "csharp": ("cs",),
    "cpp": ("c", "h", "cc", "cpp", "cxx", "hh", "hpp", "hxx"),
    "objc": ("m", "mm"),
    "ruby": ("rb",),
    "php": ("php",),
    "perl": ("pl", "pm"),
    "elixir": ("ex", "exs"),
    "bash": ("sh", "bash"),
    "markdown": ("md",),
    "codemem-js": ("js", "jsx", "mjs", "cjs", "ts", "tsx", "mts", "cts"),
}
ATTRIBUTES = "".join(f"*.{ext} diff={drv}\n" for drv, exts in _DRIVERS.items() for ext in exts)
# POSIX ERE, tried in order; "!" lines veto. Functions, classes, arrow-function consts and
# indented class members ``name(args) {`` (the first veto keeps ``if (x) {`` out).
JS_FUNCNAME = "\n".join([
    r"!^[ \t]*(if|for|while|switch|catch|return|else|do|try|with|typeof|await|new)([ \t(]|$)",
    r"^[ \t]*((export[ \t]+)?(default[ \t]+)?(async[ \t]+)?function([ \t]*[*])?[ \t]*"
    r"[A-Za-z_$][A-Za-z0-9_$]*.*)$",
    r"^[ \t]*((export[ \t]+)?(default[ \t]+)?(abstract[ \t]+)?"
    r"(class|interface|enum|namespace)[ \t]+[A-Za-z_$].*)$",
    r"^[ \t]*((export[ \t]+)?(const|let|var)[ \t]+[A-Za-z_$][A-Za-z0-9_$]*[ \t]*(:[^=]*)?=[ \t]*"
    r"(async[ \t]+)?(function|[(].*[)][ \t]*(:[^=]*)?=>|[A-Za-z_$][A-Za-z0-9_$]*[ \t]*=>).*)$",
    r"^[ \t]+(((public|private|protected|static|readonly|async|get|set|override)[ \t]+)*[*]?"
    r"[A-Za-z_$][A-Za-z0-9_$]*[ \t]*(<[^>]*>)?[(].*[)][ \t]*(:[^{;]*)?[{][ \t]*)$",
])  # fmt: skip

log = logging.getLogger(__name__)

# What git says when a commit needs an object the repository lacks (a broken or partial
# clone): that commit is skipped, not the whole walk.
_MISSING_OBJECT = re.compile(
    r"unable to read|bad object|missing (?:blob|tree|commit)|is corrupt|could not read|did not receive expected object"
)

_READ_ALONE = 64  # new changes not on top of the known ones, up to which each is read alone
_MAX_STEPS = 64
_MAX_BRANCH = 100  # commits of one merged branch listed on its card
_STEP_CHARS = 1_500
_TRAILER = re.compile(
    r"^(signed-off-by|co-authored-by|change-id|reviewed-on|reviewed-by|acked-by|tested-by|cc):",
    re.IGNORECASE,
)
_C_ESCAPES = {b"a": 7, b"b": 8, b"t": 9, b"n": 10, b"v": 11, b"f": 12, b"r": 13}


@dataclass(frozen=True)
class CommitRecord:
    """One non-merge commit as read from git, its patch already bounded.

    ``added``/``removed`` count the lines of the whole patch as git sent it (binary files
    count 0), so they stay exact when ``diff`` was trimmed, unless the commit's log output
    passed 4 MiB; ``diff_truncated`` says the diff was trimmed.
    """

    sha: str
    author: str
    authored_at: datetime
    message: str
    diff: str
    files: list[str]
    added: int = 0
    removed: int = 0
    diff_truncated: bool = False
    parents: tuple[str, ...] = ()
    # A merge's branch: the commits it brought in (sha, message), newest first.
    branch: tuple[tuple[str, str], ...] = ()


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
    args = [
        "log", tip,
        f"--format={_FORMAT}",
        "--encoding=UTF-8",
        "--no-merges",
        "--raw", "-p",
        "-M",
        "--no-color", "--no-ext-diff", "--no-textconv", "--no-relative",
        "--src-prefix=a/", "--dst-prefix=b/",
        "--submodule=short",
        *_window(since, max_commits),
    ]  # fmt: skip
    return _stream_log(repo, args, max_diff_bytes)


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
    options = [
        f"--format={_FORMAT}",
        "--encoding=UTF-8",
        "--first-parent", "--diff-merges=first-parent",
        "--raw", "-p",
        "-M",
        "--no-color", "--no-ext-diff", "--no-textconv", "--no-relative",
        "--src-prefix=a/", "--dst-prefix=b/",
        "--submodule=short",
    ]  # fmt: skip
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
    """``git log <walk> <options>`` read by ``_stream_log``; where git stops at a commit whose
    object is missing, that commit is skipped (warned, appended to ``skipped``) and the walk
    resumes from the next mainline commit. A record is held back until the next one starts:
    the one git was writing when it failed may be cut short, so it is read again alone and
    kept if that works."""
    order = {sha: i for i, sha in enumerate(mainline)}
    while True:
        held: CommitRecord | None = None
        try:
            for rec in _stream_log(repo, ["log", *walk, *options], max_diff_bytes):
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
        records = list(_stream_log(repo, ["log", "-1", *options, sha], max_diff_bytes))  # to git's exit status
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
    mainline, a commit an earlier merge brought in, or ``_MAX_BRANCH`` commits, as
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
            while cur and cur not in claimed and len(chain) < _MAX_BRANCH:
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


def _stream_log(repo: git.Repo, args: list[str], max_diff_bytes: int) -> Iterator[CommitRecord]:
    """Run one git log and parse its output as it arrives; closes ``repo`` when done."""
    with tempfile.NamedTemporaryFile(
        "w", prefix="codemem-", suffix=".gitattributes", delete=False
    ) as fh:
        fh.write(ATTRIBUTES)
    command = [
        repo.git.GIT_PYTHON_GIT_EXECUTABLE or "git",
        "-c", f"core.attributesFile={fh.name}",
        "-c", f"diff.codemem-js.xfuncname={JS_FUNCNAME}",
        "-c", "core.quotePath=false",
        "-c", "diff.noprefix=false",
        "-c", "log.showSignature=false",
        *args,
    ]  # fmt: skip
    try:
        handle = repo.git.execute(command, as_process=True)
        proc = handle.proc
        assert proc is not None and proc.stdout is not None and proc.stderr is not None
        # git's stderr is a pipe too: drain it, or a chatty git would block on it forever.
        stderr_tail = bytearray()
        drain = threading.Thread(target=_drain, args=(proc.stderr, stderr_tail), daemon=True)
        drain.start()
        finished = False
        try:
            for raw, truncated in _split_records(proc.stdout):
                record = _parse_record(raw, truncated, max_diff_bytes)
                if record is not None:
                    yield record
            finished = True
        finally:
            if not finished and proc.poll() is None:
                proc.kill()
            status = proc.wait()
            drain.join(timeout=5)
            proc.stdout.close()
        if status != 0:
            message = bytes(stderr_tail).decode("utf-8", errors="replace").strip()
            raise git.GitCommandError(command, status, message)
    finally:
        os.unlink(fh.name)
        repo.close()


def _drain(stream: IO[bytes], tail: bytearray) -> None:
    for chunk in iter(lambda: stream.read(_STDERR_KEEP), b""):
        tail.extend(chunk)
        del tail[:-_STDERR_KEEP]
    stream.close()


def _split_records(stream: IO[bytes]) -> Iterator[tuple[bytes, bool]]:
    """Cut the log stream at each start sentinel; bytes past ``_MAX_RECORD_BYTES`` are dropped."""
    parts: list[bytes] | None = None
    size = 0
    truncated = False
    pending = b""
    keep = len(_START) - 1  # a sentinel may straddle two reads

    def take(piece: bytes) -> None:
        nonlocal size, truncated
        room = _MAX_RECORD_BYTES - size
        if len(piece) > room:
            piece = piece[: max(room, 0)]
            truncated = True
        if piece:
            assert parts is not None
            parts.append(piece)
            size += len(piece)

    while True:
        chunk = stream.read(_CHUNK)
        data = pending + chunk
        pos = 0
        while (hit := data.find(_START, pos)) >= 0:
            if parts is not None:
                take(data[pos:hit])
                yield b"".join(parts), truncated
            parts, size, truncated = [], 0, False
            pos = hit + len(_START)
        if not chunk:
            if parts is not None:
                take(data[pos:])
                yield b"".join(parts), truncated
            return
        cut = max(pos, len(data) - keep)
        if parts is not None:
            take(data[pos:cut])
        pending = data[cut:]


def _parse_record(raw: bytes, truncated: bool, max_diff_bytes: int) -> CommitRecord | None:
    """One commit's bytes (after the start sentinel) into a record; None if its header is cut."""
    head, found, rest = raw.partition(_END)
    if not found:
        return None
    fields = head.split(b"\x00", 4)
    if len(fields) != 5:
        return None
    sha, parents, author, stamp, message = fields
    split = rest.find(_FILE_SEP)
    meta, patch = (rest, b"") if split < 0 else (rest[:split], rest[split + 1 :])

    # ":100644 100644 abc def M\tpath" or "... R087\told\tnew": keep the new path.
    files = [
        _decode_path(line.rsplit(b"\t", 1)[-1])
        for line in meta.split(b"\n")
        if line.startswith(b":")
    ]
    diff, trimmed, added, removed = _bound_patch(patch, max_diff_bytes)
    return CommitRecord(
        sha=sha.decode("ascii", errors="replace"),
        parents=tuple(parents.decode("ascii", errors="replace").split()),
        author=author.decode("utf-8", errors="replace"),
        authored_at=datetime.fromtimestamp(int(stamp or b"0"), tz=UTC),
        message=message.decode("utf-8", errors="replace").strip(),
        diff=diff.decode("utf-8", errors="replace"),
        files=files,
        added=added,
        removed=removed,
        diff_truncated=truncated or trimmed,
    )


def _bound_patch(patch: bytes, max_diff_bytes: int) -> tuple[bytes, bool, int, int]:
    """Drop binary files' sections, cap each file's section, then the whole patch.

    Returns (kept patch, whether anything was cut, lines added, lines removed). The counts
    cover every section: within hunks (after a file's first ``@@``) each line starts with its
    marker, so counting ``\\n+``/``\\n-`` there is exact, at C speed, and spares git a second
    diff per file for ``--numstat``.
    """
    per_file = min(MAX_FILE_DIFF_BYTES, max_diff_bytes)
    kept: list[bytes] = []
    total = added = removed = 0
    trimmed = full = False
    for index, section in enumerate(patch.split(_FILE_SEP) if patch else []):
        if index:
            section = b"diff --git " + section
        hunk_at = section.find(b"\n@@")
        if hunk_at >= 0:
            added += section.count(b"\n+", hunk_at)
            removed += section.count(b"\n-", hunk_at)
        header = section if hunk_at < 0 else section[:hunk_at]
        if full or b"\nBinary files " in header or b"\nGIT binary patch" in header:
            continue
        if not section.endswith(b"\n"):
            section += b"\n"
        limit = min(per_file, max_diff_bytes - total)
        if len(section) > limit:
            trimmed = True
            section = _cut_at_line(section, limit)
            if not section:
                full = True
                continue
        kept.append(section)
        total += len(section)
    return b"".join(kept), trimmed, added, removed


def _cut_at_line(data: bytes, limit: int) -> bytes:
    """The longest prefix of ``data`` that is at most ``limit`` bytes and ends a line."""
    if limit <= 0:
        return b""
    end = data.rfind(b"\n", 0, limit)
    return data[: end + 1] if end >= 0 else b""


def _decode_path(raw: bytes) -> str:
    """Undo git's C-style quoting of unusual paths ("a\\tb", octal escapes for raw bytes)."""
    if len(raw) < 2 or not raw.startswith(b'"') or not raw.endswith(b'"'):
        return raw.decode("utf-8", errors="replace")
    body = raw[1:-1]
    out = bytearray()
    i = 0
    while i < len(body):
        ch = body[i : i + 1]
        if ch != b"\\" or i + 1 >= len(body):
            out += ch
            i += 1
            continue
        nxt = body[i + 1 : i + 2]
        if nxt in _C_ESCAPES:
            out.append(_C_ESCAPES[nxt])
            i += 2
        elif nxt.isdigit() and body[i + 1 : i + 4].isdigit():
            out.append(int(body[i + 1 : i + 4], 8) & 0xFF)
            i += 4
        else:
            out += nxt
            i += 2
    return out.decode("utf-8", errors="replace")


def commit_to_experience(commit: CommitRecord, max_card_chars: int = 4000) -> Experience:
    """Turn one change (a commit, or a merge with its branch) into the experience the store
    indexes: the card (rendered like a session's), one edit step per file, reference terms.

    The card holds the title and messages, the PR and the issues it closes, the files and
    symbols changed, the tests added or changed and the error strings the diff touches; every
    item carries the change's SHAs in its metadata (``Experience.metadata``). Enclosing symbols
    come from the hunks alone (``parsers.parse_diff`` without new sources): reading every
    file's post-commit content would cost a git object read per file.
    """
    diff_files = parsers.parse_diff(commit.diff) if commit.diff else []
    by_path: dict[str, DiffFile] = {}
    for df in diff_files:
        by_path.setdefault(df.path, df)
    files = commit.files or [df.path for df in diff_files]

    symbols = unique(s for df in diff_files for s in df.symbols)
    added, removed = commit.added, commit.removed
    if not (added or removed):
        added = sum(df.added for df in diff_files)
        removed = sum(df.removed for df in diff_files)

    messages = [commit.message, *(message for _, message in commit.branch)]
    facts = change_facts(messages, diff_files)
    title, body = _title_and_body(commit.message)
    task = title if not body else f"{title}\n\n{body}"
    if commit.branch:
        listed = "\n".join(f"- {sha[:7]} {_subject(message)}" for sha, message in commit.branch[:30])
        task += f"\n\nCommits:\n{listed}"
    task = _trim(task, max(200, max_card_chars // 2))
    text_refs = parsers.extract_text_refs("\n".join(messages))
    errors = unique([*text_refs.exceptions, *text_refs.error_messages, *facts.error_strings])
    refs = parsers.merge_refs([text_refs, CodeRefs(files=list(files), symbols=symbols, test_ids=facts.tests)])

    date = commit.authored_at.astimezone(UTC).date().isoformat()
    noun = "file" if len(files) == 1 else "files"
    sha = commit.sha[:10]
    if facts.pr is None:
        what = f"Merge {sha}" if len(commit.parents) > 1 else f"Commit {sha}"
    else:
        what = f"PR #{facts.pr} merged as {sha}" if len(commit.parents) > 1 else f"PR #{facts.pr}, commit {sha}"
    outcome = f"{what} by {commit.author} on {date}: {len(files)} {noun}, +{added} -{removed}"
    if facts.closes:
        outcome += "; closes " + ", ".join(f"#{n}" for n in facts.closes)
    if commit.branch:
        outcome += f"; {len(commit.branch)} branch commits"
    final_diff = commit.diff
    if final_diff and (commit.diff_truncated or len(final_diff) > max_card_chars):
        marker = "\n... (diff trimmed)"
        final_diff = _trim(final_diff, max_card_chars - len(marker), "").rstrip("\n") + marker
    card = ExperienceCard(
        task=task,
        outcome=outcome,
        edited_files=list(files),
        edited_symbols=symbols,
        final_diff=final_diff,
        errors=errors,
        tests_changed=facts.tests,
        merged=[(sha, _subject(message)) for sha, message in commit.branch],
    )
    card = msgspec.structs.replace(card, text=render_card(card, max_card_chars))
    steps = [
        _file_step(position, path, by_path.get(path))
        for position, path in enumerate(files[:_MAX_STEPS])
    ]
    shas = [commit.sha, *(sha for sha, _ in commit.branch)]
    metadata: dict[str, object] = {
        "commit": commit.sha, "commits": shas[:_MAX_BRANCH + 1], "date": date,
        "author": commit.author, "subject": title,
    }
    if facts.pr is not None:
        metadata["pr"] = facts.pr
    if facts.closes:
        metadata["closes"] = facts.closes
    issues = [f"#{n}" for n in (*facts.closes, *facts.mentions, *([facts.pr] if facts.pr else []))]
    extra = [*issues, *(t for e in (*facts.error_strings, *facts.warning_strings) for t in parsers.exact_terms(e))]
    terms = list(dict.fromkeys([*refs.terms(), *(t.lower() for t in extra)]))
    return Experience(card=card, steps=steps, terms=terms, metadata=metadata)


def _subject(message: str) -> str:
    return message.partition("\n")[0].strip()


def _title_and_body(message: str) -> tuple[str, str]:
    """The change's title and body, trailers dropped; a GitHub merge's title is the PR title
    (the body's first line), its "Merge pull request #N from ..." subject kept below it."""
    subject, _, body = message.partition("\n")
    body = "\n".join(ln for ln in body.strip().splitlines() if not _TRAILER.match(ln)).strip()
    if subject.startswith("Merge pull request #") and body:
        first, _, rest = body.partition("\n")
        return first.strip(), f"{subject}\n{rest.strip()}".strip()
    return subject.strip(), body


def _file_step(position: int, path: str, df: DiffFile | None) -> StepRecord:
    """One changed file: its path, enclosing symbols and changed lines, about 1,500 chars."""
    if df is None:
        text = f"{path}: changed (no text diff kept: binary, mode-only or trimmed)"
        return StepRecord(kind="edit", position=position, text=text, files=[path])
    status = "added" if df.is_new else "deleted" if df.is_deleted else "modified"
    head = f"{path} ({status}, +{df.added} -{df.removed})"
    if df.old_path and df.old_path != path:
        head += f", renamed from {df.old_path}"
    parts = [head]
    if df.symbols:
        parts.append(_trim("Symbols: " + ", ".join(df.symbols), _STEP_CHARS // 4, " ..."))
    for hunk in df.hunks:
        span = f"-{hunk.old_start},{hunk.old_len} +{hunk.new_start},{hunk.new_len}"
        parts.append(f"@@ {span} @@ {hunk.header}".rstrip())
        parts.extend(f"-{line}" for line in hunk.removed)
        parts.extend(f"+{line}" for line in hunk.added)
        if sum(len(p) + 1 for p in parts) > _STEP_CHARS:
            break
    files = [path] if not df.old_path or df.old_path == path else [path, df.old_path]
    return StepRecord(
        kind="edit",
        position=position,
        text=_trim("\n".join(parts), _STEP_CHARS, "\n..."),
        files=files,
        symbols=list(df.symbols),
    )


_trim = partial(clip, break_at="\n")  # a commit card's parts end at a whole line
