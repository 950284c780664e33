"""Tool traffic rendered as JSON: Anthropic content blocks, OpenAI messages / tool_calls /
function_call(_output) items, and the ad-hoc ``{"tool": ..., "input": ...}`` shapes.

``events_from_json`` answers None when a value does not look like agent traffic, so a JSON
payload that is just data (an issue body, a config) stays plain text.
"""

from __future__ import annotations

import json
from typing import Any

from codemem.experience.recognising.events import (
    Event,
    ReasoningEvent,
    TextEvent,
    ToolCallEvent,
    ToolResultEvent,
    coerce_args,
)

_CALL_TYPES = frozenset(
    {"tool_use", "function_call", "tool_call", "server_tool_use", "custom_tool_call"}
)
_RESULT_TYPES = frozenset(
    {
        "tool_result",
        "function_call_output",
        "tool_response",
        "function_result",
        "custom_tool_call_output",
    }
)
_REASONING_TYPES = frozenset({"thinking", "reasoning", "redacted_thinking"})
_NAME_KEYS = ("tool", "tool_name", "name", "function", "action", "recipient_name")
_ARG_KEYS = ("input", "arguments", "args", "parameters", "tool_input", "action_input", "params")
_RESULT_TEXT_KEYS = ("content", "output", "result", "observation", "text")
_MAX_DEPTH = 6
_MAX_ITEMS = 2000  # blocks of one message looked at


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for item in value:
            if isinstance(item, dict) and isinstance(item.get("text"), str):
                parts.append(item["text"])
            elif isinstance(item, str):
                parts.append(item)
            elif isinstance(item, dict) and item.get("type") == "image":
                parts.append("[image]")
        return "\n".join(parts)
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, default=str)


def _name_of(value: Any) -> str | None:
    if isinstance(value, str) and value.strip() and len(value) < 120:
        return value.strip()
    if isinstance(value, dict) and isinstance(value.get("name"), str):
        return value["name"]
    return None


def _call(name: str, payload: Any) -> ToolCallEvent:
    return ToolCallEvent(name=name, args=coerce_args(payload))


def _openai_call(item: Any) -> ToolCallEvent | None:
    if not isinstance(item, dict):
        return None
    function: dict[Any, Any] = item["function"] if isinstance(item.get("function"), dict) else item
    name = _name_of(function.get("name"))
    if name is None:
        return None
    return _call(name, function.get("arguments", function.get("input")))


def _result(d: dict[str, Any]) -> ToolResultEvent:
    text = ""
    for key in _RESULT_TEXT_KEYS:
        if key in d:
            text = _as_text(d[key])
            break
    name = _name_of(d.get("name")) or _name_of(d.get("tool_name"))
    status = d.get("status")
    is_error = bool(d.get("is_error")) or status in ("error", "failed") or bool(d.get("error"))
    if not text and isinstance(d.get("error"), str):
        text = d["error"]
    return ToolResultEvent(text=text, name=name, is_error=is_error)


def _from_dict(d: dict[str, Any], depth: int) -> list[Event] | None:
    kind = d.get("type")
    if isinstance(d.get("tool_calls"), list):
        events: list[Event] = []
        content = _as_text(d.get("content"))
        if content.strip():
            events.append(TextEvent(content.strip()))
        events.extend(c for c in map(_openai_call, d["tool_calls"]) if c is not None)
        return events
    if isinstance(d.get("function_call"), dict):
        call = _openai_call(d["function_call"])
        return [call] if call else None
    if d.get("role") in ("tool", "function") or kind in _RESULT_TYPES:
        return [_result(d)]
    if kind in _CALL_TYPES:
        name = _name_of(d.get("name")) or _name_of(d.get("function"))
        if name is None:
            return None
        payload = next((d[k] for k in _ARG_KEYS if k in d), None)
        if payload is None and isinstance(d.get("function"), dict):
            payload = d["function"].get("arguments")
        return [_call(name, payload)]
    if kind in _REASONING_TYPES:
        text = _as_text(d.get("thinking") or d.get("text") or d.get("summary") or d.get("content"))
        return [ReasoningEvent(text.strip())] if text.strip() else []
    if kind == "text" and isinstance(d.get("text"), str):
        return [TextEvent(d["text"].strip())] if d["text"].strip() else []
    for name_key in _NAME_KEYS:
        name = _name_of(d.get(name_key))
        if name is None:
            continue
        for arg_key in _ARG_KEYS:
            if arg_key in d:
                return [_call(name, d[arg_key])]
        if name_key in ("tool", "tool_name", "action") and len(d) <= 2:
            return [_call(name, {k: v for k, v in d.items() if k != name_key})]
    nested = d.get("content")
    if isinstance(nested, list) and depth < _MAX_DEPTH:
        return _from_list(nested, depth + 1)
    if isinstance(d.get("message"), dict) and depth < _MAX_DEPTH:
        return _from_dict(d["message"], depth + 1)
    return None


def _from_list(items: list[Any], depth: int) -> list[Event] | None:
    events: list[Event] = []
    recognised = False
    for item in items[:_MAX_ITEMS]:
        if isinstance(item, dict):
            mapped = _from_dict(item, depth)
            if mapped is not None:
                recognised = True
                events.extend(mapped)
    return events if recognised else None


def events_from_json(value: Any) -> list[Event] | None:
    """Events for a decoded JSON value, or None when it is not tool traffic."""
    if isinstance(value, dict):
        return _from_dict(value, 0)
    if isinstance(value, list):
        return _from_list(value, 0)
    return None
