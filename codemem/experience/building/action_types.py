"""The actions a session's tool calls perform, whatever tool performed them: an edit, a
read, a command, a deletion, a revert. ``actions.py`` and ``shell_effects.py`` make them;
the tracker follows them.
"""

from __future__ import annotations

import msgspec


class EditAction(msgspec.Struct, frozen=True):
    """A change to one file. ``old``/``new`` are the replaced and replacing text where known;
    ``line_range`` is set when the tool addressed lines (SWE-agent ``edit N:M``)."""

    path: str
    old: str = ""
    new: str = ""
    created: bool = False
    line_range: tuple[int, int] | None = None
    note: str = ""  # how it was made when the text is unknown (``sed -i ...``)
    header: str = ""  # a patch hunk's context line (git's ``@@ ... @@ def f():``)


class ReadAction(msgspec.Struct, frozen=True):
    path: str
    offset: int | None = None  # first line shown, when the read started past line 1
    numbered: bool = True  # output carries line numbers (``cat -n`` style)
    placed: bool = True  # False when the output's position in the file is unknown (``tail``)


class CommandAction(msgspec.Struct, frozen=True):
    command: str


class DeleteAction(msgspec.Struct, frozen=True):
    paths: list[str]


class RevertAction(msgspec.Struct, frozen=True):
    paths: list[str]


Action = EditAction | ReadAction | CommandAction | DeleteAction | RevertAction
