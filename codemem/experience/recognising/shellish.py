"""Renderings without explicit tool markers: SWE-agent (a command in a fence after a
DISCUSSION, ``edit N:M ... end_of_edit``, ``(Open file: ...)`` observations), mini-swe-agent
(THOUGHT + one ```bash block), shell transcripts (``$ cmd`` then output), Codex
``*** Begin Patch`` blocks and ```diff fences (edits shown as patches).

A fence counts as a command only when it ends the message or follows a DISCUSSION /
THOUGHT header: a fence in the middle of prose is an example, not an action.
"""

from __future__ import annotations

import re

import msgspec

from codemem.experience.recognising.blocks import MAX_BLOCKS, paired_blocks
from codemem.experience.recognising.events import Event, ToolCallEvent, ToolResultEvent, text_event

_FENCE_LINE = re.compile(r"^[ \t]*```[ \t]*([^`\n]*)$", re.M)
_BEGIN_PATCH = re.compile(r"^\*\*\* Begin Patch[ \t]*$", re.M)
_PROMPT = re.compile(r"^(?:\$|bash-[\d.]*\$|\(\w+\)\s*\$)[ \t]+(\S.*)$", re.M)
_SWE_EDIT = re.compile(r"^edit\s+(\d+)(?::(\d+))?[ \t]*\n(.*?)^end_of_edit[ \t]*$", re.M | re.S)
_SWE_ARG_COMMANDS = frozenset(
    {
        "open",
        "goto",
        "scroll_up",
        "scroll_down",
        "create",
        "search_dir",
        "search_file",
        "find_file",
        "submit",
        "view",
        "cat",
    }
)
_OBSERVATION_HINTS = ("(Open file:", "(Current directory:", "[File: ", "bash-$")
_THOUGHT_HEADERS = re.compile(r"^[ \t]*(?:DISCUSSION|THOUGHT|Thought)\b", re.M)
_SHELL_TAGS = frozenset(
    {"bash", "sh", "shell", "zsh", "console", "shell-session", "terminal", "cmd"}
)
_TRANSCRIPT_TAGS = frozenset({"console", "shell-session", "terminal"})
_DIFF_TAGS = frozenset({"diff", "patch", "udiff"})


def _looks_like_diff(body: str) -> bool:
    return ("\n@@" in body or body.startswith("@@")) and (
        "+++ " in body or "--- " in body or "\n+" in body
    )


def swe_command(body: str) -> list[Event]:
    """One SWE-agent style command (or plain shell) as tool-call events."""
    body = body.strip("\n")
    edit = _SWE_EDIT.match(body)
    if edit is not None:
        start, end = edit.group(1), edit.group(2) or edit.group(1)
        return [ToolCallEvent("edit", {"range": f"{start}:{end}", "replacement": edit.group(3)})]
    first, _, rest = body.strip().partition(" ")
    if first in _SWE_ARG_COMMANDS and "\n" not in body.strip():
        parts = rest.strip().split()
        args: dict[str, object] = {}
        if parts:
            args["path" if first in ("open", "create") else "input"] = parts[0].strip("\"'")
            if len(parts) > 1 and first == "open":
                args["line"] = parts[1]
        return [ToolCallEvent(first, args)]
    return [ToolCallEvent("bash", {"command": body})]


def _prompt_transcript(body: str) -> list[Event]:
    """``$ cmd`` lines, each followed by its output."""
    events: list[Event] = []
    matches = list(_PROMPT.finditer(body))
    if not matches:
        return []
    events.extend(text_event(body[: matches[0].start()]))
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(body)
        events.append(ToolCallEvent("bash", {"command": m.group(1).strip()}))
        output = body[m.end() : end].strip("\n").rstrip()
        if output:
            events.append(ToolResultEvent(output, name="bash"))
    return events


class _Fence(msgspec.Struct, frozen=True):
    start: int
    end: int
    tag: str
    body: str


def _fences(text: str) -> list[_Fence]:
    """Fenced blocks, each opener paired with the next bare ``````` line, in one pass."""
    lines = list(_FENCE_LINE.finditer(text))
    fences: list[_Fence] = []
    i = 0
    while i < len(lines):
        opener = lines[i]
        j = i + 1
        while j < len(lines) and lines[j].group(1).strip():
            j += 1
        if j >= len(lines):
            break
        info = opener.group(1).split()
        body = text[min(opener.end() + 1, lines[j].start()) : lines[j].start()]
        fences.append(_Fence(opener.start(), lines[j].end(), info[0].lower() if info else "", body))
        if len(fences) >= MAX_BLOCKS:
            break
        i = j + 1
    return fences


def assistant_shell_events(text: str) -> list[Event] | None:
    """Events for an assistant message in a marker-less rendering, or None if none apply."""
    spans: list[tuple[int, int, list[Event]]] = []
    for b in paired_blocks(text, _BEGIN_PATCH, "*** End Patch"):
        patch = text[b.start : b.end]
        spans.append((b.start, b.end, [ToolCallEvent("apply_patch", {"patch": patch})]))
    has_header = _THOUGHT_HEADERS.search(text) is not None
    fences = _fences(text)
    for i, m in enumerate(fences):
        tag, body = m.tag, m.body
        at_end = i == len(fences) - 1 and not text[m.end :].strip()
        if tag in _DIFF_TAGS or (not tag and _looks_like_diff(body)):
            spans.append((m.start, m.end, [ToolCallEvent("apply_patch", {"patch": body})]))
        elif tag in _TRANSCRIPT_TAGS or (tag in _SHELL_TAGS and _PROMPT.match(body)):
            transcript = _prompt_transcript(body)
            if transcript:
                spans.append((m.start, m.end, transcript))
        elif (
            (tag in _SHELL_TAGS or not tag)
            and (at_end or (has_header and i == len(fences) - 1))
            and body.strip()
        ):
            spans.append((m.start, m.end, swe_command(body)))
    if not spans:
        if not fences and _PROMPT.search(text):
            transcript = _prompt_transcript(text)
            return transcript or None
        return None
    spans.sort(key=lambda s: s[0])
    events: list[Event] = []
    cursor = 0
    for start, end, converted in spans:
        if start < cursor:
            continue
        events.extend(text_event(text[cursor:start], reasoning=has_header))
        events.extend(converted)
        cursor = end
    events.extend(text_event(text[cursor:], reasoning=has_header))
    return events


def user_observation_events(text: str) -> list[Event] | None:
    """A user-role message that is really a tool observation (SWE-agent style)."""
    head, tail = text[:300], text[-300:]
    if any(hint in head or hint in tail for hint in _OBSERVATION_HINTS):
        return [ToolResultEvent(text.strip("\n").rstrip())]
    return None
