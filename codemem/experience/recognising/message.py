"""One message's text -> typed events, whatever agent rendered it.

Families are tried from the most explicit to the least: a whole-message JSON blob, marker
lines (``Tool call ...``, ``Tool result (...)``, ``[tool_use]``, ReAct, JSON lines), XML-ish
tags, then marker-less shell conventions; anything else is text. Every recogniser works in
one pass with bounded block counts, so a huge or hostile message costs linear time.
"""

from __future__ import annotations

import json

from codemem.contract.types import Role
from codemem.experience.recognising.events import Event, text_event
from codemem.experience.recognising.jsonblobs import events_from_json
from codemem.experience.recognising.markers import marker_events
from codemem.experience.recognising.markup import markup_events
from codemem.experience.recognising.shellish import assistant_shell_events, user_observation_events

_JSON_LIMIT = 4_000_000  # larger blobs are not decoded whole


def _strip_nul(text: str) -> str:
    return text.replace("\x00", "") if "\x00" in text else text


def recognise_events(text: str, role: Role) -> list[Event]:
    """Typed events of one message; never raises on any input text."""
    if not isinstance(text, str):
        return []
    text = _strip_nul(text)
    stripped = text.lstrip()
    if not stripped:
        return []
    if stripped[0] in "{[" and len(stripped) <= _JSON_LIMIT:
        try:
            decoded = json.loads(stripped)
        except (ValueError, RecursionError):
            decoded = None
        if decoded is not None:
            mapped = events_from_json(decoded)
            if mapped is not None:
                return mapped
    for recogniser in (marker_events, markup_events):
        events = recogniser(text)
        if events is not None:
            return events
    if role == "assistant":
        events = assistant_shell_events(text)
        if events is not None:
            return events
    else:
        events = user_observation_events(text)
        if events is not None:
            return events
    return text_event(text)
