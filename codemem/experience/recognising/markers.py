"""Line-marker renderings: ``Tool call Edit {...}`` / ``Tool result (Bash):`` (codemem's own
Claude Code rendering), ``[tool_use] Name {...}`` / ``[tool_result]``, ``Tool: Name`` with
``Input:`` or ``key: value`` lines, ReAct ``Action:`` / ``Action Input:`` / ``Observation:``,
OpenHands ``EXECUTION RESULT of [tool]:``, ``[thinking]`` / ``Thought:`` prefixes, and JSON
tool blobs on a line of their own.

A message is cut at marker lines into segments. A result's body is opaque (a file may hold
anything): inside it only another strong call/result marker starts a new segment.
"""

from __future__ import annotations

import re

from codemem.experience.recognising.events import (
    Event,
    ToolCallEvent,
    ToolResultEvent,
    coerce_args,
    decode_json_prefix,
    text_event,
)
from codemem.experience.recognising.jsonblobs import events_from_json

_NAME = r"[A-Za-z_][\w.:\-]*"
# One alternation, so finding the next marker is a single scan.
_MARKER = re.compile(
    rf"^(?:"
    rf"(?P<call>Tool call|\[tool_use\]|\[tool_call\]|\[function_call\]|Calling tool)"
    rf"[: ]\s*(?P<cname>{_NAME})"
    rf"|\[(?:tool_use|tool_call):\s*(?P<bname>{_NAME})\]"
    rf"|(?P<tool>Tool|Action|Function call):[ \t]*(?P<tname>{_NAME})[ \t]*$"
    rf"|(?P<result>Tool result|\[tool_result\]|Tool output|Function result)"
    rf"(?:[ \t]*\((?P<rmeta>[^)\n]*)\))?[ \t]*:?"
    rf"|EXECUTION RESULT of \[(?P<xname>{_NAME})\]:"
    rf"|(?P<obs>Observation|OBSERVATION):"
    rf"|(?P<think>\[thinking\]|\[reasoning\]|Thought:|THOUGHT:|Thinking:)"
    rf"|(?P<json>\{{\s*\"(?:tool|tool_name|name|type|function|role|tool_calls)\")"
    rf")",
    re.M,
)
_MAX_JSON_MISSES = 32  # then JSON-looking lines are taken as plain text
_MAX_EVENTS = 2000  # per message; past it the rest stays in the last segment
_STRONG = frozenset({"call", "bcall", "result", "xresult"})
_ARG_HEADER = re.compile(
    r"[ \t]*(?:Input|Arguments|Args|Parameters|Action Input|Tool input)\s*:[ \t]*"
)
_KEY_VALUE = re.compile(r"[ \t]*([A-Za-z_][\w\-]*)\s*[:=][ \t]*(.*)$")


def _kind(match: re.Match[str]) -> str:
    if match.group("call"):
        return "call"
    if match.group("bname"):
        return "bcall"
    if match.group("tool"):
        return "tool"
    if match.group("result"):
        return "result"
    if match.group("xname"):
        return "xresult"
    if match.group("obs"):
        return "obs"
    if match.group("think"):
        return "think"
    return "json"


def _parse_args(text: str, start: int) -> tuple[dict[str, object], int]:
    """Arguments after a call marker: JSON (possibly over many lines), ``Input: ...``, or
    ``key: value`` lines up to a blank line. Returns (args, end offset)."""
    header = _ARG_HEADER.match(text, start)
    if header is None and start < len(text) and text[start] == "\n":
        header = _ARG_HEADER.match(text, start + 1)
    if header is not None:
        start = header.end()
    decoded = decode_json_prefix(text, start)
    if decoded is not None:
        return coerce_args(decoded[0]), decoded[1]
    line_end = text.find("\n", start)
    line_end = len(text) if line_end < 0 else line_end
    rest = text[start:line_end].strip()
    if header is not None:
        return coerce_args(rest), line_end
    if rest.startswith("(") and rest.endswith(")"):
        return coerce_args(rest[1:-1]), line_end
    args: dict[str, object] = {"input": rest} if rest else {}
    pos = line_end + 1
    while pos < len(text):
        nxt = text.find("\n", pos)
        nxt = len(text) if nxt < 0 else nxt
        kv = _KEY_VALUE.match(text, pos, nxt)
        if kv is None:
            break
        args[kv.group(1)] = kv.group(2).strip()
        pos = nxt + 1
    return args, min(pos, len(text)) if len(args) > (1 if rest else 0) else line_end


def _result_meta(meta: str | None) -> tuple[str | None, bool]:
    if not meta:
        return None, False
    parts = [p.strip() for p in meta.split(",") if p.strip()]
    is_error = any(p.lower() in ("error", "failed", "is_error") for p in parts)
    names = [p for p in parts if p.lower() not in ("error", "failed", "is_error", "ok")]
    return (names[0] if names else None), is_error


def _result_body(body: str) -> str:
    """Keep a result's first-line indentation (``cat -n`` output) unless it is inline."""
    body = body.rstrip()
    return body.lstrip("\n") if body.startswith("\n") else body.lstrip(" \t")


def marker_events(text: str) -> list[Event] | None:
    """Events of a message cut at marker lines, or None when no marker is found."""
    events: list[Event] = []
    open_kind = "text"  # what the segment since open_start is: text, reasoning or result
    open_start = 0
    result_name: str | None = None
    result_error = False
    found = False
    pos = 0
    json_misses = 0  # JSON-looking lines that were not tool traffic
    while len(events) < _MAX_EVENTS and (match := _MARKER.search(text, pos)) is not None:
        kind = _kind(match)
        pos = match.end()
        if open_kind == "result" and kind not in _STRONG:
            continue
        if (
            kind == "obs"
            and match.start() != 0
            and not (events and isinstance(events[-1], ToolCallEvent))
        ):
            continue
        mapped: list[Event] | None = None
        json_end = 0
        if kind == "json":
            if json_misses >= _MAX_JSON_MISSES:
                continue
            decoded = decode_json_prefix(text, match.start())
            mapped = events_from_json(decoded[0]) if decoded else None
            if mapped is None or decoded is None:
                json_misses += 1
                continue
            json_end = decoded[1]
        body = text[open_start : match.start()]
        if open_kind == "result":
            events.append(ToolResultEvent(_result_body(body), result_name, result_error))
        else:
            events.extend(text_event(body, reasoning=open_kind == "reasoning"))
        found = True
        open_kind, open_start = "text", match.end()
        if kind in ("call", "bcall", "tool"):
            name = match.group("cname") or match.group("bname") or match.group("tname")
            args, end = _parse_args(text, match.end())
            events.append(ToolCallEvent(name=name, args=args))
            pos = open_start = max(end, match.end())
        elif mapped is not None:
            events.extend(mapped)
            pos = open_start = json_end
        elif kind == "think":
            open_kind = "reasoning"
        else:
            open_kind = "result"
            if kind == "result":
                result_name, result_error = _result_meta(match.group("rmeta"))
            else:
                result_name, result_error = match.group("xname"), False
    if not found:
        return None
    body = text[open_start:]
    if open_kind == "result":
        events.append(ToolResultEvent(_result_body(body), result_name, result_error))
    else:
        events.extend(text_event(body, reasoning=open_kind == "reasoning"))
    return events
