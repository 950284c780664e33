"""Diff text for the card: recognising a ``git diff`` command and its output, cleaning the
final patch (gitlink entries of nested repositories are bookkeeping, not edits), rendering
one edit as a unified hunk, and trimming a diff to a budget on hunk boundaries.
"""

from __future__ import annotations

import difflib
import re

from codemem.clip import clip

_GIT_DIFF = re.compile(
    r"\bgit\b(?:\s+-C\s+\S+|\s+--no-pager|\s+-c\s+\S+|\s+--git-dir[= ]\S+|\s+--work-tree[= ]\S+)*"
    r"\s+diff\b(?![^|;&\n]*--(?:stat|name-only|name-status|shortstat|numstat)\b)"
)
_DIFF_START = re.compile(r"^diff --git ", re.M)
_GITLINK = re.compile(r"mode 160000$|^index \S+ 160000$|^[+-]Subproject commit ", re.M)
_MORE_LINES_ROOM = 40  # for the "... (N more lines)" line


def is_git_diff_command(command: str) -> bool:
    return bool(_GIT_DIFF.search(command))


def diff_sections(text: str) -> list[str]:
    """The ``diff --git`` sections of ``text`` (anything before the first is dropped)."""
    starts = [m.start() for m in _DIFF_START.finditer(text)]
    return [
        text[s : (starts[i + 1] if i + 1 < len(starts) else len(text))]
        for i, s in enumerate(starts)
    ]


def clean_patch(text: str) -> str:
    """The ``diff --git`` part of command output, without gitlink (submodule) sections."""
    kept = [s for s in diff_sections(text) if not _GITLINK.search(s)]
    return "".join(kept).rstrip() + ("\n" if kept else "")


def edit_hunk(path: str, old: str, new: str, start: int | None = None, context: int = 2) -> str:
    """A unified diff of one edit; line numbers from ``start`` when the location is known."""
    old_lines = old.split("\n") if old else []
    new_lines = new.split("\n") if new else []
    base = (start or 1) - 1
    out = [f"--- a/{path}", f"+++ b/{path}"]
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for group in matcher.get_grouped_opcodes(context):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        out.append(f"@@ -{base + i1 + 1},{i2 - i1} +{base + j1 + 1},{j2 - j1} @@")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                out.extend(" " + line for line in old_lines[a1:a2])
                continue
            out.extend("-" + line for line in old_lines[a1:a2])
            out.extend("+" + line for line in new_lines[b1:b2])
    return "\n".join(out) + "\n" if len(out) > 2 else ""


def trim_diff(text: str, max_chars: int) -> str:
    """At most ``max_chars`` of a diff, cut after a whole line, saying how much was left out."""
    if len(text) <= max_chars:
        return text
    head = clip(text, max(max_chars - _MORE_LINES_ROOM, 0), marker="", break_at="\n")
    left = text[len(head) :].count("\n")
    return head + f"\n... ({left} more lines)\n"
