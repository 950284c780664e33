"""XML-ish renderings: OpenHands ``<function=name><parameter=k>v</parameter>``, Anthropic
``<invoke name=...><parameter name=...>``, ``<tool_use>`` / ``<tool_call>`` wrapping JSON or
``<name>``/``<input>`` tags, results in ``<tool_result>`` / ``<function_results>`` /
``<tool_response>`` / mini-swe-agent ``<returncode>..<output>``, and ``<thinking>`` blocks.

Each tag's openers and closers are paired in one pass (``blocks``), the blocks laid out in
order, and the text between them becomes text events.
"""

from __future__ import annotations

import re
from itertools import islice

from codemem.experience.recognising.blocks import paired_blocks
from codemem.experience.recognising.events import (
    Event,
    ReasoningEvent,
    ToolCallEvent,
    ToolResultEvent,
    coerce_args,
    decode_json_prefix,
    text_event,
)
from codemem.experience.recognising.jsonblobs import events_from_json

_OPENHANDS = re.compile(r"<function=([\w.\-]+)>")
_OPENHANDS_PARAM = re.compile(r"<parameter=([\w.\-]+)>")
_INVOKE = re.compile(r"<invoke\s+name=[\"']([^\"']+)[\"']\s*>")
_INVOKE_PARAM = re.compile(r"<parameter\s+name=[\"']([^\"']+)[\"'][^>]*>")
_INNER_NAME = re.compile(r"<(?:name|tool_name|tool)>\s*([^<]+?)\s*</(?:name|tool_name|tool)>")
_INNER_ARGS = ("input", "arguments", "parameters", "args")
_INNER_TAG = re.compile(r"<([A-Za-z_][\w\-]*)>")
_RETURNCODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>\s*")
_WRAPPED_TAGS = ("tool_use", "tool_call", "function_call")
_RESULT_TAGS = ("tool_result", "function_results", "tool_response", "observation", "tool_output")
_THINKING_TAGS = ("thinking", "think", "reasoning")
_MAX_INNER_TAGS = 50
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


def _opener(tag: str, attributes: bool = False) -> re.Pattern[str]:
    return re.compile(rf"<{tag}(\s[^>]*)?>" if attributes else rf"<{tag}>")


_WRAPPED_OPENERS = {tag: _opener(tag) for tag in _WRAPPED_TAGS}
_RESULT_OPENERS = {tag: _opener(tag, attributes=True) for tag in _RESULT_TAGS}
_THINKING_OPENERS = {tag: _opener(tag) for tag in _THINKING_TAGS}


def _params(body: str, opener: re.Pattern[str]) -> dict[str, str]:
    """``<parameter ...>value</parameter>`` pairs; an unclosed one runs to the next."""
    return {
        str(b.groups[0]): _param_value(body[b.body_start : b.body_end])
        for b in paired_blocks(body, opener, "</parameter>")
    }


def _inner_tags(body: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for m in islice(_INNER_TAG.finditer(body), _MAX_INNER_TAGS):
        end = body.find(f"</{m.group(1)}>", m.end())
        if end >= 0 and m.group(1) not in out:
            out[m.group(1)] = _param_value(body[m.end() : end])
    return out


def _wrapped(inner: str) -> list[Event]:
    decoded = decode_json_prefix(inner)
    if decoded is not None:
        mapped = events_from_json(decoded[0])
        if mapped:
            return mapped
    name = _INNER_NAME.search(inner)
    if name is None:
        return text_event(inner)
    tags = _inner_tags(inner)
    body = next((tags[t] for t in _INNER_ARGS if t in tags), None)
    if body is None:
        return [ToolCallEvent(name=name.group(1))]
    decoded = decode_json_prefix(body)
    if decoded is not None:
        return [ToolCallEvent(name=name.group(1), args=coerce_args(decoded[0]))]
    nested = _inner_tags(body)
    return [
        ToolCallEvent(
            name=name.group(1), args=dict(nested) if nested else coerce_args(body.strip())
        )
    ]


def _result(attrs: str, body: str) -> list[Event]:
    name = _NAME_ATTR.search(attrs)
    return [
        ToolResultEvent(
            text=_param_value(body).rstrip(),
            name=name.group(1) if name else None,
            is_error=bool(_ERROR_ATTR.search(attrs)),
        )
    ]


def _spans(text: str) -> list[tuple[int, int, list[Event]]]:
    spans: list[tuple[int, int, list[Event]]] = []
    for b in paired_blocks(text, _OPENHANDS, "</function>"):
        args = _params(text[b.body_start : b.body_end], _OPENHANDS_PARAM)
        spans.append((b.start, b.end, [ToolCallEvent(name=str(b.groups[0]), args=dict(args))]))
    for b in paired_blocks(text, _INVOKE, "</invoke>"):
        args = _params(text[b.body_start : b.body_end], _INVOKE_PARAM)
        spans.append((b.start, b.end, [ToolCallEvent(name=str(b.groups[0]), args=dict(args))]))
    for tag, opener in _WRAPPED_OPENERS.items():
        for b in paired_blocks(text, opener, f"</{tag}>"):
            spans.append((b.start, b.end, _wrapped(text[b.body_start : b.body_end])))
    for tag, opener in _RESULT_OPENERS.items():
        for b in paired_blocks(text, opener, f"</{tag}>"):
            body = text[b.body_start : b.body_end]
            spans.append((b.start, b.end, _result(b.groups[0] or "", body)))
    for m in _RETURNCODE.finditer(text):
        end, output = m.end(), ""
        if text.startswith("<output>", end):
            close = text.find("</output>", end)
            output = text[end + 8 : close if close >= 0 else len(text)]
            end = close + 9 if close >= 0 else len(text)
        code = int(m.group(1))
        spans.append(
            (m.start(), end, [ToolResultEvent(_param_value(output).rstrip(), is_error=code != 0)])
        )
    for tag, opener in _THINKING_OPENERS.items():
        for b in paired_blocks(text, opener, f"</{tag}>"):
            body = text[b.body_start : b.body_end].strip()
            spans.append((b.start, b.end, [ReasoningEvent(body)] if body else []))
    return spans


def markup_events(text: str) -> list[Event] | None:
    """Events of a message holding XML-ish tool tags, or None when it holds none."""
    if "<" not in text or not any(opener in text for opener in _OPENERS):
        return None
    spans = _spans(text)
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
