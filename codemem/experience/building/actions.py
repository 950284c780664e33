"""Tool calls -> typed actions (edit, read, command, delete, revert), whatever the tool is
called: Claude Code (Edit/MultiEdit/Write/Read/Bash), OpenHands / Anthropic
str_replace_editor, SWE-agent commands, Codex apply_patch, generic file tools. A shell
command becomes a command plus its file effects (``shell_effects``), since many agents edit
through the shell.
"""

from __future__ import annotations

import shlex
from typing import Any

from codemem.experience.building.action_types import (
    Action,
    CommandAction,
    EditAction,
    ReadAction,
)
from codemem.experience.building.patches import patch_edits
from codemem.experience.building.shell_effects import shell_effects
from codemem.experience.recognising.events import ToolCallEvent

_EDIT = frozenset(
    {
        "edit",
        "edit_file",
        "str_replace",
        "replace",
        "search_replace",
        "replace_in_file",
        "file_edit",
        "editfile",
        "replace_string_in_file",
        "update_file",
    }
)
_MULTI_EDIT = frozenset({"multiedit", "multi_edit"})
_WRITE = frozenset(
    {
        "write",
        "write_file",
        "create_file",
        "create",
        "writefile",
        "file_write",
        "new_file",
        "write_to_file",
        "save_file",
    }
)
_EDITOR = frozenset(
    {
        "str_replace_editor",
        "str_replace_based_edit_tool",
        "text_editor",
        "edit_tool",
        "editor",
        "file_editor",
    }
)
_PATCH = frozenset({"apply_patch", "patch", "apply_diff", "applypatch"})
_READ = frozenset(
    {
        "read",
        "read_file",
        "view",
        "view_file",
        "open",
        "open_file",
        "readfile",
        "file_read",
        "notebookread",
        "cat",
    }
)
_SHELL = frozenset(
    {
        "bash",
        "shell",
        "execute_bash",
        "run",
        "terminal",
        "run_command",
        "exec_command",
        "execute_command",
        "cmd",
        "sh",
        "run_shell_command",
        "local_shell",
        "execute",
        "run_terminal_cmd",
        "exec",
        "container.exec",
        "bashoutput",
    }
)
_PATH_KEYS = (
    "file_path",
    "path",
    "file",
    "filename",
    "target_file",
    "filepath",
    "notebook_path",
    "absolute_path",
    "input",
)
_OLD_KEYS = ("old_string", "old_str", "old", "search", "old_text", "original", "find")
_NEW_KEYS = ("new_string", "new_str", "new", "replace", "new_text", "replacement", "updated")
_CONTENT_KEYS = ("content", "file_text", "text", "contents", "data")
_CMD_KEYS = ("command", "cmd", "script", "commands", "input")


def tool_key(name: str) -> str:
    """A tool's name without namespaces or case: ``functions.Bash`` -> ``bash``."""
    key = name.strip().lower()
    for sep in ("__", "."):
        if sep in key and key != "container.exec":
            key = key.rsplit(sep, 1)[-1]
    return key


def _first(args: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        value = args.get(key)
        if value is not None:
            return value
    return None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _command_text(args: dict[str, Any]) -> str:
    value = _first(args, _CMD_KEYS)
    if isinstance(value, list):
        parts = [str(p) for p in value]
        if len(parts) >= 3 and parts[0] in ("bash", "sh", "zsh") and parts[1] in ("-c", "-lc"):
            return parts[2]
        if len(parts) == 2 and parts[0] == "apply_patch":
            return f"apply_patch <<'EOF'\n{parts[1]}\nEOF"
        return " ".join(shlex.quote(p) for p in parts)
    return value if isinstance(value, str) else ""


def _editor_actions(args: dict[str, Any]) -> list[Action]:
    command = _text(args.get("command")).lower()
    path = _text(_first(args, _PATH_KEYS))
    if not path:
        return []
    if command == "create":
        return [EditAction(path, new=_text(_first(args, _CONTENT_KEYS)), created=True)]
    if command in ("str_replace", "replace"):
        return [
            EditAction(path, old=_text(_first(args, _OLD_KEYS)), new=_text(_first(args, _NEW_KEYS)))
        ]
    if command == "insert":
        line = args.get("insert_line")
        start = (
            int(line) + 1
            if isinstance(line, int) or (isinstance(line, str) and line.isdigit())
            else None
        )
        new = _text(_first(args, _NEW_KEYS))
        rng = (start, start + max(new.count("\n"), 0)) if start is not None else None
        return [EditAction(path, new=new, line_range=rng, note="insert")]
    if command == "view":
        return [ReadAction(path)]
    if command == "undo_edit":
        return [EditAction(path, note="undo_edit")]
    return []


def _swe_edit(args: dict[str, Any]) -> list[Action]:
    rng = _text(args.get("range"))
    start, _, end = rng.partition(":")
    if not (start.isdigit() and (end or start).isdigit()):
        return []
    return [
        EditAction(
            "", new=_text(args.get("replacement")), line_range=(int(start), int(end or start))
        )
    ]


def actions_for_call(call: ToolCallEvent) -> list[Action]:
    """The actions one tool call performs; unknown tools with a command become commands."""
    key = tool_key(call.name)
    args = call.args
    if key in _EDITOR:
        return _editor_actions(args)
    if key == "edit" and "range" in args:
        return _swe_edit(args)
    if key in _MULTI_EDIT:
        path = _text(_first(args, _PATH_KEYS))
        edits = args.get("edits")
        if not path or not isinstance(edits, list):
            return []
        return [
            EditAction(path, old=_text(_first(e, _OLD_KEYS)), new=_text(_first(e, _NEW_KEYS)))
            for e in edits
            if isinstance(e, dict)
        ]
    if key in _EDIT:
        path = _text(_first(args, _PATH_KEYS))
        if path and (_first(args, _OLD_KEYS) is not None or _first(args, _NEW_KEYS) is not None):
            return [
                EditAction(
                    path, old=_text(_first(args, _OLD_KEYS)), new=_text(_first(args, _NEW_KEYS))
                )
            ]
        return (
            [EditAction(path, new=_text(_first(args, _CONTENT_KEYS)), created=True)] if path else []
        )
    if key in _WRITE:
        path = _text(_first(args, _PATH_KEYS))
        return (
            [EditAction(path, new=_text(_first(args, _CONTENT_KEYS)), created=True)] if path else []
        )
    if key in _PATCH:
        patch = _text(_first(args, ("patch", "diff", "input", "content", "command")))
        return patch_edits(patch)
    if key in _READ:
        path = _text(_first(args, _PATH_KEYS))
        offset = args.get("offset", args.get("line"))
        start = (
            int(offset)
            if isinstance(offset, int) or (isinstance(offset, str) and offset.isdigit())
            else None
        )
        return [ReadAction(path, offset=start if start and start > 1 else None)] if path else []
    command = _command_text(args) if key in _SHELL or "command" in args or "cmd" in args else ""
    if not command.strip():
        return []
    return [CommandAction(command), *shell_effects(command)]
