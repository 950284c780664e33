"""Typed records that cross module boundaries: messages in, memory items stored, hits out.

msgspec Structs are used (not dicts) so every interface names its fields, and so the API
edge can decode straight into them.
"""

from __future__ import annotations

from typing import Literal

import msgspec

Role = Literal["user", "assistant"]


class TextPart(msgspec.Struct, tag="text", tag_field="type"):
    text: str


class ImageURL(msgspec.Struct):
    url: str


class ImagePart(msgspec.Struct, tag="image_url", tag_field="type"):
    image_url: ImageURL


ContentPart = TextPart | ImagePart


class Message(msgspec.Struct):
    """One message of an Add, as the contract defines it."""

    role: Role
    content: str | list[ContentPart]
    timestamp: int | None = None

    @property
    def text(self) -> str:
        """The message's indexable text: the string, or its text parts joined in order."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(p.text for p in self.content if isinstance(p, TextPart))


class AddRequest(msgspec.Struct):
    """One chunk of a session's messages, as the Add contract sends it."""

    request_id: str
    user_id: str
    session_id: str
    messages: list[Message]


class AddResult(msgspec.Struct):
    request_id: str
    user_id: str
    session_id: str
    stored: int  # items written by this call; 0 when it was a retry of a stored request
    duplicate: bool = False


class SearchRequest(msgspec.Struct):
    user_id: str
    query: str | list[ContentPart]
    top_k: int  # required by the contract: a body without it is refused (422), not defaulted
    options: list[str] | None = None

    @property
    def text(self) -> str:
        if isinstance(self.query, str):
            parts = [self.query]
        else:
            parts = [p.text for p in self.query if isinstance(p, TextPart)]
        if self.options:
            parts.extend(self.options)
        return "\n".join(parts)


class Hit(msgspec.Struct):
    """One ranked search result."""

    id: str
    content: str | list[ContentPart]
    score: float
    created_at: str
    session_id: str
    metadata: dict[str, object]
