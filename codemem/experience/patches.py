"""Patches an agent applies as edits: unified diffs (``diff --git`` / ``---``/``+++`` with
``@@`` hunks) and Codex ``*** Begin Patch`` envelopes, split into one edit per hunk with
the hunk's old and new text (context included) so edits from patches and from
old/new-string tools are handled alike downstream.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import msgspec

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_CODEX_FILE = re.compile(r"^\*\*\* (Update|Add|Delete) File: (.+?)\s*$")
_GIT_FILE = re.compile(r"^diff --git a/(\S+) b/(\S+)")


def _strip_ab(path: str) -> str:
    path = path.split("\t", 1)[0].strip()
    return path[2:] if path.startswith(("a/", "b/")) else path


class PatchHunk(msgspec.Struct, frozen=True):
    """One hunk of a patch: its file, old and new text (context included), where it starts."""

    path: str
    old: str
    new: str
    new_start: int | None = None
    created: bool = False
    header: str = ""  # the text after a hunk's ``@@`` (git's function context)


def _edit(
    path: str, old: list[str], new: list[str], start: int | None, created: bool, header: str = ""
) -> PatchHunk:
    return PatchHunk(path, "\n".join(old), "\n".join(new), start, created, header)


def _hunk_header(line: str) -> str:
    """The context after a hunk marker: ``@@ -1,2 +1,2 @@ def f():`` or Codex ``@@ def f():``."""
    body = line[2:]
    end = body.find("@@")
    return (body[end + 2 :] if end >= 0 else body).strip()


def _codex(lines: list[str]) -> Iterator[PatchHunk]:
    path = kind = header = ""
    old: list[str] = []
    new: list[str] = []

    def flush() -> Iterator[PatchHunk]:
        if path and (old or new or kind != "Update"):
            yield _edit(path, old, new, None, kind == "Add", header)

    for line in lines:
        m = _CODEX_FILE.match(line)
        if m:
            yield from flush()
            kind, path, old, new, header = m.group(1), m.group(2), [], [], ""
        elif line.startswith("@@") or line.startswith("*** "):
            yield from flush()
            old, new = [], []
            header = _hunk_header(line) if line.startswith("@@") else header
        elif path:
            tag, body = line[:1], line[1:]
            if tag in ("-", " "):
                old.append(body)
            if tag in ("+", " "):
                new.append(body)
    yield from flush()


def _unified(lines: list[str]) -> Iterator[PatchHunk]:
    path = header = ""
    created = False
    old: list[str] = []
    new: list[str] = []
    start: int | None = None
    in_hunk = False

    def flush() -> Iterator[PatchHunk]:
        if path and in_hunk and (old or new):
            yield _edit(path, old, new, start, created, header)

    for i, line in enumerate(lines):
        git = _GIT_FILE.match(line)
        if git or (
            line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")
        ):
            yield from flush()
            in_hunk, old, new = False, [], []
            if git:
                path, created = git.group(2), False
            else:
                old_path, new_path = _strip_ab(line[4:]), _strip_ab(lines[i + 1][4:])
                created = created or old_path == "/dev/null"
                path = old_path if new_path == "/dev/null" else new_path
            continue
        if not in_hunk and (line.startswith("+++ ") or line.startswith("new file mode")):
            created = created or line.startswith("new file mode")
            continue
        hunk = _HUNK.match(line)
        if hunk or line.startswith("@@"):
            yield from flush()
            old, new, in_hunk = [], [], True
            start = int(hunk.group(3)) if hunk else None
            header = _hunk_header(line)
            continue
        if in_hunk:
            tag, body = line[:1], line[1:]
            if tag in ("-", " ", ""):
                old.append(body)
            if tag in ("+", " ", ""):
                new.append(body)
    yield from flush()


def patch_hunks(patch: str) -> Iterator[PatchHunk]:
    """One hunk per change of a unified diff or Codex patch; nothing for other text."""
    if not patch:
        return
    lines = patch.splitlines()
    if any(line.startswith("*** Begin Patch") for line in lines[:5]) or _CODEX_FILE.match(
        lines[0] if lines else ""
    ):
        yield from _codex(lines)
    else:
        yield from _unified(lines)
