"""Tool calls -> typed actions (edit, read, command, delete, revert), whatever the tool is
called: Claude Code (Edit/MultiEdit/Write/Read/Bash), OpenHands / Anthropic
str_replace_editor, SWE-agent commands, Codex apply_patch, generic file tools. Shell
commands are read for their file effects too (heredoc writes, ``sed -i``, ``rm``,
``git checkout -- f``, ``cat f``), since many agents edit through the shell.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

import msgspec

from codemem.experience.building.patches import patch_hunks
from codemem.experience.recognising.events import ToolCallEvent


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

_HEREDOC = re.compile(r"<<-?[ \t]*(['\"]?)(\w+)\1([^\n]*)\n")
_CAT_BEFORE = re.compile(r"\b(?:cat|tee)\b(?:[ \t]+-a)?[ \t]*(?:>>?[ \t]*([^\s<>|;&'\"]+))?[ \t]*$")
_TARGET_AFTER = re.compile(r"[ \t]*>>?[ \t]*([^\s<>|;&'\"]+)")
_PY_WRITE = re.compile(r"open\(\s*[rbf]?['\"]([^'\"]+\.\w+)['\"]\s*,\s*['\"][wa]")
_REDIRECT = re.compile(r"(?:echo|printf)\b[^|;&\n]*?(?<![0-9&])>>?\s*([^\s<>|;&'\"]+)")
_SEPARATORS = frozenset({"&&", "||", ";", "|", "&", ";;", "\n", "(", ")"})
_READERS = frozenset({"cat", "head", "tail", "nl", "less", "more", "bat"})
_FILE_LIKE = re.compile(r"^[\w./~\-]+\.[A-Za-z0-9_]{1,8}$")


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


def _patch_edits(patch: str) -> list[Action]:
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
        return _patch_edits(patch)
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


_TOKEN = re.compile(
    r"""\d*>&\d+|&>>?|(?:[^\s'"&|;()<>]+|'[^']*'|"(?:[^"\\]|\\.)*")+|&&|\|\||>>|[;&|()<>\n]"""
)
_QUOTED = re.compile(r"'([^']*)'|\"((?:[^\"\\\\]|\\\\.)*)\"")


def _tokens(command: str) -> list[str]:
    """Shell words and operators, quotes removed (a light, never-failing ``shlex``)."""
    return [
        _QUOTED.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(2), t)
        if ("'" in t or '"' in t)
        else t
        for t in _TOKEN.findall(command)
    ]


def _simple_commands(command: str) -> list[tuple[list[str], bool]]:
    """Simple commands of a line, each with whether its output is piped onward."""
    out: list[tuple[list[str], bool]] = [([], False)]
    for token in _tokens(command):
        if token in _SEPARATORS or set(token) <= set(";&|()"):
            if token == "|" and out[-1][0]:
                out[-1] = (out[-1][0], True)
            out.append(([], False))
        else:
            out[-1][0].append(token)
    return [c for c in out if c[0]]


class _Heredoc(msgspec.Struct, frozen=True):
    target: str | None  # the file a ``cat > f << EOF`` writes
    body: str


def _heredocs(command: str) -> tuple[list[_Heredoc], str]:
    """The heredocs of a command line, and the line with their bodies cut out. One pass:
    each body ends at its terminator line, and an unterminated one takes the rest."""
    docs: list[_Heredoc] = []
    kept: list[str] = []
    pos = 0
    while (m := _HEREDOC.search(command, pos)) is not None:
        tag = m.group(2)
        terminator = re.compile(rf"^[ \t]*{re.escape(tag)}[ \t]*$", re.M).search(command, m.end())
        body_end = terminator.start() if terminator else len(command)
        before = command[command.rfind("\n", 0, m.start()) + 1 : m.start()]
        cat = _CAT_BEFORE.search(before)
        target = None
        if cat is not None:
            after = _TARGET_AFTER.match(m.group(3))
            target = cat.group(1) or (after.group(1) if after else None)
        docs.append(_Heredoc(target, command[m.end() : body_end].removesuffix("\n")))
        kept.append(command[pos : m.end()])
        if terminator is None:
            return docs, "".join(kept)
        pos = terminator.end()
    kept.append(command[pos:])
    return docs, "".join(kept)


def shell_effects(command: str) -> list[Action]:
    """File effects of a shell command line: writes, in-place edits, deletions, reverts, reads."""
    actions: list[Action] = []
    patch_at = command.find("*** Begin Patch")
    if patch_at >= 0:
        return _patch_edits(command[patch_at:])
    docs, command = _heredocs(command) if "<<" in command else ([], command)
    for doc in docs:
        if doc.target:
            actions.append(EditAction(doc.target, new=doc.body, created=True))
        elif "open(" in doc.body:  # a script fed to an interpreter: its literal writes count
            actions.extend(EditAction(p, note="script write") for p in _PY_WRITE.findall(doc.body))
    if "python" in command and "open(" in command:
        actions.extend(EditAction(p, note="script write") for p in _PY_WRITE.findall(command))
    actions.extend(
        EditAction(p, note="shell redirect", created=True)
        for p in _REDIRECT.findall(command)
        if _FILE_LIKE.match(p) and not p.startswith("/dev/")
    )
    for words, piped in _simple_commands(command):
        actions.extend(_simple_effects(words, piped))
    return actions


def _operands(words: list[str]) -> list[str]:
    return [
        w
        for w in words[1:]
        if not w.startswith("-") and w not in (">", ">>", "<") and ">&" not in w
    ]


def _simple_effects(words: list[str], piped: bool) -> list[Action]:
    while words and "=" in words[0] and not words[0].startswith("-"):
        words = words[1:]  # environment assignments
    if not words:
        return []
    head = words[0].rsplit("/", 1)[-1]
    if head == "rm":
        return [DeleteAction([w for w in _operands(words)])] if _operands(words) else []
    if head == "sed" and any(w.startswith("-i") or w == "--in-place" for w in words[1:]):
        files = [w for w in _operands(words)[1:] if _FILE_LIKE.match(w)]
        return [EditAction(f, note="sed -i") for f in files]
    if head == "git" and len(words) > 2:
        sub = next(
            (
                w
                for i, w in enumerate(words[1:], 1)
                if not w.startswith("-") and words[i - 1] not in ("-C", "-c")
            ),
            "",
        )
        if sub in ("checkout", "restore") and "--" in words:
            return [RevertAction(words[words.index("--") + 1 :])]
        if sub == "restore":
            return [
                RevertAction(
                    [w for w in _operands(words) if w != "restore" and _FILE_LIKE.match(w)]
                )
            ]
        return []
    if piped or ">" in words or ">>" in words:
        return []
    if head in _READERS:
        files = [w for w in _operands(words) if _FILE_LIKE.match(w)]
        numbered = head == "nl" or (head == "cat" and "-n" in words)
        placed = head not in ("tail", "less", "more") and len(files) == 1
        return [ReadAction(f, numbered=numbered, placed=placed) for f in files[:3]]
    if head == "sed" and "-n" in words:
        files = [w for w in _operands(words)[1:] if _FILE_LIKE.match(w)]
        offset = _sed_offset(words)
        return [
            ReadAction(f, offset=offset, numbered=False, placed=offset is not None)
            for f in files[:1]
        ]
    return []


_SED_RANGE = re.compile(r"^'?(\d+),\s*\d+p'?$")


def _sed_offset(words: list[str]) -> int | None:
    for w in words:
        m = _SED_RANGE.match(w)
        if m:
            return int(m.group(1))
    return None
