"""Typed events recognised inside one message's text.

Agents render their tool traffic as text in many ways; recognition (``recognise.py``)
maps every rendering onto these four kinds so the builder reasons about one vocabulary.
``ToolCallEvent.args`` keeps the tool's own argument payload (arbitrary JSON); the
builder's ``actions`` module is what turns it into typed edits, reads and commands.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec


class TextEvent(msgspec.Struct, frozen=True, tag="text"):
    text: str


class ReasoningEvent(msgspec.Struct, frozen=True, tag="reasoning"):
    text: str


class ToolCallEvent(msgspec.Struct, frozen=True, tag="tool_call"):
    name: str
    args: dict[str, Any] = {}


class ToolResultEvent(msgspec.Struct, frozen=True, tag="tool_result"):
    text: str
    name: str | None = None
    is_error: bool = False


Event = TextEvent | ReasoningEvent | ToolCallEvent | ToolResultEvent

_DECODER = json.JSONDecoder()


def decode_json_prefix(text: str, start: int = 0) -> tuple[Any, int] | None:
    """Decode one JSON value starting at ``start`` (after blanks); ``(value, end)`` or None.

    Used where a JSON payload is followed by more text, so ``json.loads`` would refuse it.
    """
    n = len(text)
    while start < n and text[start] in " \t\r\n":
        start += 1
    if start >= n or text[start] not in "{[":
        return None
    try:
        value, end = _DECODER.raw_decode(text, start)
    except (ValueError, RecursionError):
        return None
    return value, end


def coerce_args(value: Any) -> dict[str, Any]:
    """Tool arguments as a dict: JSON strings are decoded, scalars kept under ``input``."""
    if isinstance(value, dict):
        return {str(k): v for k, v in value.items()}
    if isinstance(value, str):
        stripped = value.strip()
        if stripped.startswith("{"):
            try:
                decoded = json.loads(stripped)
            except (ValueError, RecursionError):
                return {"input": value}
            if isinstance(decoded, dict):
                return {str(k): v for k, v in decoded.items()}
        return {"input": value} if stripped else {}
    if value is None:
        return {}
    return {"input": value}


def text_event(text: str, reasoning: bool = False) -> list[Event]:
    """A text (or reasoning) event, or nothing when the text is blank."""
    stripped = text.strip()
    if not stripped:
        return []
    return [ReasoningEvent(stripped) if reasoning else TextEvent(stripped)]
