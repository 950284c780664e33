"""What a shell command line did to files: heredoc and redirect writes, ``sed -i`` edits,
``rm`` deletions, ``git checkout -- f`` / ``git restore`` reverts, and reads by ``cat``,
``head``, ``sed -n``. Read from the text with a light tokenizer that never fails, since agents
edit and read through the shell as often as through file tools.
"""

from __future__ import annotations

import re

import msgspec

from codemem.experience.building.action_types import (
    Action,
    DeleteAction,
    EditAction,
    ReadAction,
    RevertAction,
)
from codemem.experience.building.patches import patch_edits

_HEREDOC = re.compile(r"<<-?[ \t]*(['\"]?)(\w+)\1([^\n]*)\n")
_CAT_BEFORE = re.compile(r"\b(?:cat|tee)\b(?:[ \t]+-a)?[ \t]*(?:>>?[ \t]*([^\s<>|;&'\"]+))?[ \t]*$")
_TARGET_AFTER = re.compile(r"[ \t]*>>?[ \t]*([^\s<>|;&'\"]+)")
_PY_WRITE = re.compile(r"open\(\s*[rbf]?['\"]([^'\"]+\.\w+)['\"]\s*,\s*['\"][wa]")
_REDIRECT = re.compile(r"(?:echo|printf)\b[^|;&\n]*?(?<![0-9&])>>?\s*([^\s<>|;&'\"]+)")
_SEPARATORS = frozenset({"&&", "||", ";", "|", "&", ";;", "\n", "(", ")"})
_READERS = frozenset({"cat", "head", "tail", "nl", "less", "more", "bat"})
_FILE_LIKE = re.compile(r"^[\w./~\-]+\.[A-Za-z0-9_]{1,8}$")


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
        return patch_edits(command[patch_at:])
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
