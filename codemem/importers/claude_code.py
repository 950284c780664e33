"""Claude Code session transcripts (JSON Lines of events) rendered as Add messages.

This is the one rendering codemem's eval replay and ``codemem ingest-transcripts`` use:
each conversational event becomes one plain-text message, so a stored session reads the
way the agent saw it. The experience builder deliberately does not depend on this exact
format (other agents render differently); it recognises it among others.

Choices: summary / file-history-snapshot / queue-operation / system events are bookkeeping,
not conversation, and are skipped. Sidechain events (a Task sub-agent's own conversation)
are skipped too: the parent thread already holds the sub-agent's answer as the Task tool's
result, and a sub-agent's first prompt would otherwise pass for the session's task.
``isMeta`` events are Claude Code's own injected notes and are skipped as well.
"""

from __future__ import annotations

import json
import tarfile
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path

import msgspec

from codemem.contract.types import Message, Role

_CONVERSATION_TYPES = frozenset({"user", "assistant"})
_REMINDER_OPEN = "<system-reminder>"
_REMINDER_CLOSE = "</system-reminder>"


class Transcript(msgspec.Struct):
    """One session: its messages in order, and the input lines that could not be read."""

    session_id: str | None
    messages: list[Message]
    skipped_lines: int = 0
    cwd: str | None = None
    skipped_at: list[int] = []  # their line numbers (1-based), for the reader to find them


def _timestamp_ms(value: object) -> int | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


def _compact_json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _strip_reminders(text: str) -> str:
    """Drop Claude Code's injected ``<system-reminder>`` blocks (one pass, even unclosed)."""
    if _REMINDER_OPEN not in text:
        return text
    out: list[str] = []
    pos = 0
    while (start := text.find(_REMINDER_OPEN, pos)) >= 0:
        end = text.find(_REMINDER_CLOSE, start)
        if end < 0:
            break
        out.append(text[pos:start])
        pos = end + len(_REMINDER_CLOSE)
    out.append(text[pos:])
    return "\n".join(part.strip("\n") for part in out if part.strip()).rstrip()


def _result_text(content: object) -> str:
    """A tool_result's content is a string or a list of text/image blocks."""
    if isinstance(content, str):
        return _strip_reminders(content)
    if isinstance(content, list):
        parts: list[str] = []
        for block in content:
            if isinstance(block, dict):
                if block.get("type") == "text" and isinstance(block.get("text"), str):
                    parts.append(block["text"])
                elif block.get("type") == "image":
                    parts.append("[image]")
            elif isinstance(block, str):
                parts.append(block)
        return _strip_reminders("\n".join(parts))
    return "" if content is None else _compact_json(content)


def _render_block(block: object, tool_names: dict[str, str]) -> str:
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        return ""
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        return _strip_reminders(text) if isinstance(text, str) else ""
    if kind == "thinking":
        thinking = block.get("thinking")
        return f"[thinking] {thinking}" if isinstance(thinking, str) and thinking else ""
    if kind == "redacted_thinking":
        return ""
    if kind == "tool_use":
        name = str(block.get("name") or "tool")
        tool_id = block.get("id")
        if isinstance(tool_id, str):
            tool_names[tool_id] = name
        return f"Tool call {name} {_compact_json(block.get('input', {}))}"
    if kind == "tool_result":
        tool_id = block.get("tool_use_id")
        name = tool_names.get(tool_id, "") if isinstance(tool_id, str) else ""
        label = ", ".join(x for x in (name, "error" if block.get("is_error") else "") if x)
        head = f"Tool result ({label}):" if label else "Tool result:"
        return f"{head}\n{_result_text(block.get('content'))}"
    if kind == "image":
        return "[image]"
    return ""


def _render_event(event: dict[str, object], tool_names: dict[str, str]) -> Message | None:
    kind = event.get("type")
    if kind not in _CONVERSATION_TYPES or event.get("isSidechain") or event.get("isMeta"):
        return None
    message = event.get("message")
    if not isinstance(message, dict):
        return None
    role = message.get("role", kind)
    if role not in _CONVERSATION_TYPES:
        return None
    content = message.get("content")
    if isinstance(content, str):
        text = _strip_reminders(content)
    elif isinstance(content, list):
        text = "\n\n".join(t for t in (_render_block(b, tool_names) for b in content) if t)
    else:
        return None
    if not text.strip():
        return None
    typed_role: Role = "user" if role == "user" else "assistant"
    return Message(role=typed_role, content=text, timestamp=_timestamp_ms(event.get("timestamp")))


def render_claude_code_events(lines: Iterable[str | bytes]) -> Transcript:
    """Render a transcript's JSON lines, one message per conversational event; never raises
    on bad input: lines that are not a JSON object are counted in ``skipped_lines``."""
    messages: list[Message] = []
    tool_names: dict[str, str] = {}
    session_id: str | None = None
    cwd: str | None = None
    skipped: list[int] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except (ValueError, UnicodeDecodeError):
            skipped.append(number)
            continue
        if not isinstance(event, dict):
            skipped.append(number)
            continue
        if session_id is None and isinstance(event.get("sessionId"), str):
            session_id = event["sessionId"]
        if cwd is None and isinstance(event.get("cwd"), str):
            cwd = event["cwd"]
        rendered = _render_event(event, tool_names)
        if rendered is not None:
            messages.append(rendered)
    return Transcript(session_id=session_id, messages=messages, skipped_lines=len(skipped), cwd=cwd,
                      skipped_at=skipped)


def load_claude_code_jsonl(path: str | Path) -> Transcript:
    """Render one ``.jsonl`` transcript file."""
    with open(path, "rb") as handle:
        return render_claude_code_events(handle)


def iter_transcripts_from_tar(tar_path: str | Path) -> Iterator[tuple[str, Transcript]]:
    """Stream ``(member name, transcript)`` for every ``.jsonl`` member of a (compressed)
    tar archive, in archive order, without unpacking it to disk."""
    with tarfile.open(tar_path, mode="r|*") as archive:
        for member in archive:
            if not member.isfile() or not member.name.endswith(".jsonl"):
                continue
            handle = archive.extractfile(member)
            if handle is None:
                continue
            with handle:
                yield member.name, render_claude_code_events(handle)
