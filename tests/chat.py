"""Dated team chat for the timeline tests: sessions Added through `Memory`, and conversation
cards carrying the facts a Search's dialogue index reads."""

from __future__ import annotations

from datetime import datetime

from codemem.contract.types import AddRequest, Message
from codemem.memory import Memory
from codemem.timeline.index import facts_metadata

Chat = list[tuple[str, str, list[str]]]  # (session id, day, texts), turns a minute apart


def ms(day: str) -> int:
    """10:00 UTC on `day` (YYYY-MM-DD), in epoch milliseconds."""
    return int(datetime.fromisoformat(f"{day}T10:00:00+00:00").timestamp() * 1000)


def add_chat(memory: Memory, user: str, sessions: Chat) -> None:
    """One Add per session, its turns alternating user and assistant."""
    for sid, day, texts in sessions:
        start = ms(day)
        memory.add(AddRequest(f"{sid}-0", user, sid, [Message("user" if i % 2 == 0 else "assistant", text, start + i * 60_000)
                                                      for i, text in enumerate(texts)]))


def fact_card(key: str, day: str, texts: list[str]) -> dict[str, object]:
    """A conversation's card row with the facts its texts state."""
    when = ms(day)
    return {"session_key": key, "session_id": key, "timestamp": when,
            "metadata": {"conversation": True, "facts": facts_metadata(texts, [when] * len(texts))}}
