"""One commit as read from git (``CommitRecord``), and the streamed ``git log`` it is parsed from.

One ``git log --raw -p`` streams the whole range, split on sentinel bytes, because one git
process per commit is what makes naive importers take minutes on a few thousand commits.
Every commit's diff is bounded (per file and in total) so a vendored or generated commit
cannot blow up memory or the card.

Hunk headers come from git's language-aware funcname drivers (``diff=python``, ``golang``,
``java``... plus a JS/TS pattern of ours), passed as a fallback attributes file that the
repository's own ``.gitattributes`` still override. Git's default picks the nearest unindented
line, i.e. the *class* for any method edit; the drivers name the method, which is what
``parsers.parse_diff`` resolves symbols from when it only has the hunks.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO

import git

__all__ = [
    "ATTRIBUTES",
    "JS_FUNCNAME",
    "LOG_FORMAT",
    "MAX_BRANCH",
    "MAX_DIFF_BYTES",
    "MAX_FILE_DIFF_BYTES",
    "CommitRecord",
    "stream_log",
]

MAX_DIFF_BYTES = 200_000  # kept of one commit's patch
MAX_FILE_DIFF_BYTES = 50_000  # kept of one file's patch, so one lockfile cannot use it all
MAX_BRANCH = 100  # commits of one merged branch listed on its card
_MAX_RECORD_BYTES = 4 << 20  # read of one commit (message + file list + patch) before skipping
_CHUNK = 1 << 20
_STDERR_KEEP = 8_192

# Sentinels around each commit's header; NUL never occurs in a message or a textual patch.
_START = b"\x00\x1ecodemem\x1f"
_END = b"\x00\x1e/codemem\x1f"
LOG_FORMAT = "%x00%x1ecodemem%x1f%H%x00%P%x00%an%x00%at%x00%B%x00%x1e/codemem%x1f"
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


def stream_log(repo: git.Repo, args: list[str], max_diff_bytes: int) -> Iterator[CommitRecord]:
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
