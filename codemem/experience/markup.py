"""XML-ish renderings: OpenHands ``<function=name><parameter=k>v</parameter>``, Anthropic
``<invoke name=...><parameter name=...>``, ``<tool_use>`` / ``<tool_call>`` wrapping JSON or
``<name>``/``<input>`` tags, results in ``<tool_result>`` / ``<function_results>`` /
``<tool_response>`` / mini-swe-agent ``<returncode>..<output>``, and ``<thinking>`` blocks.

Every pattern is matched on its own; matches are then laid out in order and the text
between them becomes text events.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from codemem.experience.events import (
    Event,
    ReasoningEvent,
    ToolCallEvent,
    ToolResultEvent,
    coerce_args,
    decode_json_prefix,
    text_event,
)
from codemem.experience.jsonblobs import events_from_json

_OPENHANDS = re.compile(r"<function=([\w.\-]+)>(.*?)(?:</function>|\Z)", re.S)
_OPENHANDS_PARAM = re.compile(
    r"<parameter=([\w.\-]+)>(.*?)(?:</parameter>|(?=<parameter=)|\Z)", re.S
)
_INVOKE = re.compile(r"<invoke\s+name=[\"']([^\"']+)[\"']\s*>(.*?)(?:</invoke>|\Z)", re.S)
_INVOKE_PARAM = re.compile(r"<parameter\s+name=[\"']([^\"']+)[\"'][^>]*>(.*?)</parameter>", re.S)
_WRAPPED_CALL = re.compile(r"<(tool_use|tool_call|function_call)>(.*?)</\1>", re.S)
_INNER_NAME = re.compile(r"<(?:name|tool_name|tool)>\s*([^<]+?)\s*</(?:name|tool_name|tool)>")
_INNER_ARGS = re.compile(r"<(input|arguments|parameters|args)>(.*?)</\1>", re.S)
_INNER_TAG = re.compile(r"<([A-Za-z_][\w\-]*)>(.*?)</\1>", re.S)
_RESULT = re.compile(
    r"<(tool_result|function_results|tool_response|observation|tool_output)(\s[^>]*)?>(.*?)(?:</\1>|\Z)",
    re.S,
)
_RETURNCODE = re.compile(
    r"<returncode>\s*(-?\d+)\s*</returncode>\s*(?:<output>(.*?)(?:</output>|\Z))?", re.S
)
_THINKING = re.compile(r"<(thinking|think|reasoning)>(.*?)(?:</\1>|\Z)", re.S)
_ERROR_ATTR = re.compile(r"(?:is_error|error|status)\s*=\s*[\"']?(?:true|1|error)", re.I)
_NAME_ATTR = re.compile(r"(?:name|tool|tool_name)\s*=\s*[\"']([^\"']+)[\"']")

# Cheap substring gate: no tag, no regex work.
_OPENERS = (
    "<function=",
    "<invoke",
    "<tool_use>",
    "<tool_call>",
    "<function_call>",
    "<tool_result",
    "<function_results",
    "<tool_response",
    "<observation",
    "<tool_output",
    "<returncode>",
    "<thinking>",
    "<think>",
    "<reasoning>",
)


def _param_value(raw: str) -> str:
    if raw.startswith("\n"):
        raw = raw[1:]
    return raw[:-1] if raw.endswith("\n") else raw


def _openhands(m: re.Match[str]) -> list[Event]:
    args = {p.group(1): _param_value(p.group(2)) for p in _OPENHANDS_PARAM.finditer(m.group(2))}
    return [ToolCallEvent(name=m.group(1), args=dict(args))]


def _invoke(m: re.Match[str]) -> list[Event]:
    args = {p.group(1): _param_value(p.group(2)) for p in _INVOKE_PARAM.finditer(m.group(2))}
    return [ToolCallEvent(name=m.group(1), args=dict(args))]


def _wrapped(m: re.Match[str]) -> list[Event]:
    inner = m.group(2)
    decoded = decode_json_prefix(inner)
    if decoded is not None:
        mapped = events_from_json(decoded[0])
        if mapped:
            return mapped
    name = _INNER_NAME.search(inner)
    if name is None:
        return text_event(inner)
    args_match = _INNER_ARGS.search(inner)
    if args_match is not None:
        body = args_match.group(2)
        decoded = decode_json_prefix(body)
        if decoded is not None:
            return [ToolCallEvent(name=name.group(1), args=coerce_args(decoded[0]))]
        tags = {t.group(1): _param_value(t.group(2)) for t in _INNER_TAG.finditer(body)}
        return [
            ToolCallEvent(
                name=name.group(1), args=dict(tags) if tags else coerce_args(body.strip())
            )
        ]
    return [ToolCallEvent(name=name.group(1))]


def _result(m: re.Match[str]) -> list[Event]:
    attrs = m.group(2) or ""
    name = _NAME_ATTR.search(attrs)
    body = m.group(3)
    return [
        ToolResultEvent(
            text=_param_value(body).rstrip(),
            name=name.group(1) if name else None,
            is_error=bool(_ERROR_ATTR.search(attrs)),
        )
    ]


def _returncode(m: re.Match[str]) -> list[Event]:
    code = int(m.group(1))
    return [ToolResultEvent(text=_param_value(m.group(2) or "").rstrip(), is_error=code != 0)]


def _thinking(m: re.Match[str]) -> list[Event]:
    body = m.group(2).strip()
    return [ReasoningEvent(body)] if body else []


_PATTERNS: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], list[Event]]], ...] = (
    (_OPENHANDS, _openhands),
    (_INVOKE, _invoke),
    (_WRAPPED_CALL, _wrapped),
    (_RESULT, _result),
    (_RETURNCODE, _returncode),
    (_THINKING, _thinking),
)


def markup_events(text: str) -> list[Event] | None:
    """Events of a message holding XML-ish tool tags, or None when it holds none."""
    if "<" not in text or not any(opener in text for opener in _OPENERS):
        return None
    spans: list[tuple[int, int, list[Event]]] = []
    for pattern, convert in _PATTERNS:
        spans.extend((m.start(), m.end(), convert(m)) for m in pattern.finditer(text))
    if not spans:
        return None
    spans.sort(key=lambda s: (s[0], -s[1]))
    events: list[Event] = []
    cursor = 0
    for start, end, converted in spans:
        if start < cursor:
            continue  # nested in (or overlapping) a span already taken
        events.extend(text_event(_strip_wrappers(text[cursor:start])))
        events.extend(converted)
        cursor = end
    events.extend(text_event(_strip_wrappers(text[cursor:])))
    return events


_WRAPPERS = re.compile(r"</?(?:function_calls|tool_calls)>")


def _strip_wrappers(text: str) -> str:
    return _WRAPPERS.sub("", text)
