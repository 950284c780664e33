"""Patches an agent applies as edits: unified diffs (``diff --git`` / ``---``/``+++`` with
``@@`` hunks, read by ``parsers.parse_diff``) and Codex ``*** Begin Patch`` envelopes, split
into one edit per hunk with the hunk's old and new text (context included) so edits from
patches and from old/new-string tools are handled alike downstream.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import msgspec

import parsers
from codemem.experience.building.action_types import Action, EditAction

_CODEX_FILE = re.compile(r"^\*\*\* (Update|Add|Delete) File: (.+?)\s*$")


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


def _unified(patch: str) -> Iterator[PatchHunk]:
    for diff_file in parsers.parse_diff(patch, resolve_symbols=False):
        for hunk in diff_file.hunks:
            old = [line[1:] for line in hunk.body if line[0] in " -"]
            new = [line[1:] for line in hunk.body if line[0] in " +"]
            if old or new:
                start = hunk.new_start if hunk.located else None
                yield _edit(diff_file.path, old, new, start, diff_file.is_new, hunk.header)


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
        yield from _unified(patch)


def patch_edits(patch: str) -> list[Action]:
    """One edit action per hunk of a patch, with the lines the new text occupies."""
    return [
        EditAction(
            h.path,
            old=h.old,
            new=h.new,
            created=h.created,
            header=h.header,
            line_range=None
            if h.new_start is None
            else (h.new_start, h.new_start + max(h.new.count("\n"), 0)),
        )
        for h in patch_hunks(patch)
    ]
