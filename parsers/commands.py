"""Shell commands an agent ran or suggested: behind ``$`` prompts, in shell code
blocks, in tool-call JSON (``"command": "..."``), or on lines of their own.

Prompted and tool-call commands are taken as written; a bare line must start
with a known tool and look like an invocation, since prose starts with
"make sure" and "git is" too.
"""

from __future__ import annotations

import json
import re

_MAX_COMMAND = 300

_PROMPT = re.compile(
    r"^[ \t]*(?:\([\w.-]+\)[ \t]*)?(?:[\w.-]+@[\w.-]+(?::[^\s$#]*)?[ \t]*)?"
    r"(?:\$|❯|%(?=[ \t]))[ \t]+"
    r"(?P<cmd>[\w./~\"'-][^\n]*)$", re.M)
_TOOL_CALL = re.compile(r'"(?:command|cmd)"\s*:\s*"(?P<cmd>(?:[^"\\\n]|\\.){1,2000})"')

_GIT_SUB = frozenset(
    "status diff log show checkout commit add apply stash blame grep reset rebase cherry-pick "
    "clone fetch pull push branch bisect restore switch merge rev-parse ls-files am "
    "format-patch tag remote config clean mv rm worktree describe shortlog reflog init "
    "submodule".split()
)
_NPM_SUB = frozenset(
    "test t run install i ci build start add exec audit update uninstall remove".split())
_GO_SUB = frozenset("test build run vet mod get install generate fmt work tool".split())
_CARGO_SUB = frozenset("test build run check clippy fmt bench add doc update nextest".split())
_ENGLISH = frozenset(
    "sure it the a an this that them some any use sense changes your our up sure, it's them. "
    "is was will can should would to of for and or in on with".split()
)

_RUNNERS = re.compile(
    r"^(?:pytest|py\.test|tox|nox|jest|mocha|vitest|mvn|gradle|\./gradlew|\./mvnw|ruff|mypy|flake8|"
    r"black|pylint|isort|pyright|eslint|tsc|bazel|ctest|cmake|ninja|"
    r"(?:\./)?(?:[\w.-]+/)*(?:manage|runtests)\.py|\./x\.py|\./configure)(?:\s|$)")
_PYTHON = re.compile(r"^python(?:\d(?:\.\d+)?)?\s+(?:-\w+\s+)*(?:-m\s+[\w.]+|[\w./-]+\.py)(?:\s|$)")
_WRAPPED = re.compile(r"^(?:uv|poetry|pipenv|hatch|pdm)\s+run\s+(?P<rest>.+)$")


def _clean(cmd: str) -> str:
    return " ".join(cmd.split())[:_MAX_COMMAND]


def looks_like_command(line: str) -> bool:
    """Whether a bare line (no prompt) is a command invocation we recognise."""
    text = line.strip()
    if not text or len(text) > _MAX_COMMAND:
        return False
    wrapped = _WRAPPED.match(text)
    if wrapped:
        text = wrapped.group("rest")
    words = text.split()
    head, sub = words[0], (words[1] if len(words) > 1 else "")
    if _RUNNERS.match(text) or _PYTHON.match(text):
        return not (head == "tox" and sub.lower() in _ENGLISH)
    if head == "git":
        return sub in _GIT_SUB
    if head in ("npm", "yarn", "pnpm", "bun"):
        return sub in _NPM_SUB or (head != "npm" and bool(sub) and sub.lower() not in _ENGLISH
                                   and len(words) <= 4)
    if head == "npx":
        return bool(sub) and sub.lower() not in _ENGLISH
    if head == "go":
        return sub in _GO_SUB
    if head == "cargo":
        return sub in _CARGO_SUB
    if head in ("pip", "pip3"):
        return sub in ("install", "uninstall", "freeze", "show", "list")
    if head == "make":
        return len(words) <= 3 and all(re.fullmatch(r"[\w./=-]+", w) for w in words[1:]) and (
            sub.lower() not in _ENGLISH)
    if head == "node":
        return bool(re.match(r"[\w./-]+\.(?:m|c)?js$", sub))
    if head == "docker":
        return sub in ("build", "run", "compose", "exec", "ps", "logs")
    return False


PROMPT_HINT = re.compile(r"[$❯%][ \t]")


def prompt_commands(text: str) -> list[str]:
    """Commands behind ``$ ``/``❯ ``/``user@host:~$ `` prompts."""
    return [_clean(m["cmd"]) for m in _PROMPT.finditer(text)]


def tool_call_commands(text: str) -> list[str]:
    """``"command": "..."`` values from tool-call JSON embedded in a transcript."""
    if '"command"' not in text and '"cmd"' not in text:
        return []
    out: list[str] = []
    for m in _TOOL_CALL.finditer(text):
        try:
            value = json.loads(f'"{m["cmd"]}"')
        except json.JSONDecodeError:
            value = m["cmd"]
        if isinstance(value, str) and value.strip():
            out.append(_clean(value.split("\n", 1)[0]))
    return out


def shell_block_commands(lines: list[str]) -> list[str]:
    """Commands in a shell code block: prompted lines if there are any (the rest is
    output), else every non-comment line, joining ``\\`` continuations."""
    prompted = prompt_commands("\n".join(lines))
    if prompted:
        return prompted
    out: list[str] = []
    pending = ""
    for raw in lines[:200]:
        line = raw.strip()
        if not line or (line.startswith("#") and not pending):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        out.append(_clean(pending + line))
        pending = ""
    if pending:
        out.append(_clean(pending))
    return out


_HEADS = frozenset(
    "pytest py.test tox nox jest mocha vitest mvn gradle ./gradlew ./mvnw ruff mypy flake8 "
    "black pylint isort pyright eslint tsc bazel ctest cmake ninja ./x.py ./configure git npm "
    "yarn pnpm bun npx go cargo pip pip3 make node docker uv poetry pipenv hatch pdm".split()
)


def _head_ok(line: str) -> bool:
    head = line.split(None, 1)[0] if line.strip() else ""
    return head in _HEADS or head.startswith("python") or head.endswith(
        ("manage.py", "runtests.py"))


def line_commands(lines: list[str]) -> list[str]:
    """Bare lines that start with a recognised command."""
    return [_clean(line) for line in lines if _head_ok(line) and looks_like_command(line)]


def clean_command(text: str) -> str:
    return _clean(text)
