"""Validation of what an Add or a Search carries, beyond its JSON types.

The contract's rules live here (not in the HTTP layer) so the CLI and other front ends
get the same checks. Each failure names the offending field, e.g. `messages[3].content`.
"""

from __future__ import annotations

import base64
import binascii
import re

from codemem.contract.types import (
    AddRequest,
    ContentPart,
    ImagePart,
    Message,
    SearchRequest,
    TextPart,
)
from codemem.errors import InvalidInput, PayloadTooLarge

_DATA_URI = re.compile(r"^data:(image/(?:png|jpeg|jpg|webp));base64,(.*)$", re.DOTALL | re.IGNORECASE)
# Magic numbers of the image types the contract allows, so a mislabelled payload is refused.
_MAGIC = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/jpg": (b"\xff\xd8\xff",),
    "image/webp": (b"RIFF",),
}


def require_text(value: str, field: str, allow_nul: bool = False) -> None:
    """Non-empty. Ids may not hold NUL (it separates the parts of a key); content may:
    tool output is sometimes binary, and refusing it would lose the whole chunk."""
    if not value or not value.strip():
        raise InvalidInput(f"{field} must be a non-empty string")
    if not allow_nul and "\x00" in value:
        raise InvalidInput(f"{field} must not contain NUL characters")


def validate_image(part: ImagePart, field: str, max_bytes: int) -> None:
    url = part.image_url.url
    m = _DATA_URI.match(url)
    if m is None:
        if url.startswith(("http://", "https://", "ftp://", "//")):
            raise InvalidInput(f"{field}: remote image URLs are not accepted; send a base64 data URI")
        raise InvalidInput(f"{field}: images must be data URIs of type image/png, image/jpeg or image/webp")
    mime, payload = m.group(1).lower(), m.group(2)
    if len(payload) * 3 // 4 > max_bytes + 3:
        raise PayloadTooLarge(f"{field}: image is larger than {max_bytes} bytes")
    try:
        raw = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidInput(f"{field}: image data is not valid base64") from None
    if len(raw) > max_bytes:
        raise PayloadTooLarge(f"{field}: image is larger than {max_bytes} bytes")
    if not raw.startswith(_MAGIC[mime]) or (mime == "image/webp" and raw[8:12] != b"WEBP"):
        raise InvalidInput(f"{field}: image data is not a {mime} file")


def validate_content(content: str | list[ContentPart], field: str, max_image_bytes: int) -> None:
    if isinstance(content, str):
        require_text(content, field, allow_nul=True)
        return
    if not content:
        raise InvalidInput(f"{field} must be a non-empty string or a non-empty array of parts")
    for i, part in enumerate(content):
        where = f"{field}[{i}]"
        if isinstance(part, TextPart):
            require_text(part.text, f"{where}.text", allow_nul=True)
        else:
            validate_image(part, f"{where}.image_url.url", max_image_bytes)


# Stored as a 64-bit integer (found by schema-driven fuzzing: a larger one made the write fail).
MAX_TIMESTAMP_MS = 2**63 - 1


def validate_add(req: AddRequest, max_image_bytes: int) -> None:
    require_text(req.request_id, "request_id")
    require_text(req.user_id, "user_id")
    require_text(req.session_id, "session_id")
    if not req.messages:
        raise InvalidInput("messages must be a non-empty array")
    for i, msg in enumerate(req.messages):
        validate_message(msg, f"messages[{i}]", max_image_bytes)


def validate_message(msg: Message, field: str, max_image_bytes: int) -> None:
    if msg.role not in ("user", "assistant"):
        raise InvalidInput(f"{field}.role must be 'user' or 'assistant'")
    if msg.timestamp is not None and not 0 <= msg.timestamp <= MAX_TIMESTAMP_MS:
        raise InvalidInput(f"{field}.timestamp must be Unix milliseconds, 0 to {MAX_TIMESTAMP_MS}")
    validate_content(msg.content, f"{field}.content", max_image_bytes)


def validate_search(req: SearchRequest, max_image_bytes: int) -> None:
    require_text(req.user_id, "user_id")
    if req.top_k < 1:
        raise InvalidInput("top_k must be an integer >= 1")
    validate_content(req.query, "query", max_image_bytes)
    if req.options is not None:
        for i, opt in enumerate(req.options):
            if "\x00" in opt:
                raise InvalidInput(f"options[{i}] must not contain NUL characters")
