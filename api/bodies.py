"""Strict decoding of request bodies.

Bodies are decoded with msgspec in strict mode rather than by Litestar, whose decoding
coerces types (it would take `"top_k": "5"`); the contract wants wrong types refused with
422 naming the field, and a body that is not JSON at all refused with 400.
"""

from __future__ import annotations

from typing import TypeVar

import msgspec
from litestar import Request

from codemem.errors import InvalidInput

T = TypeVar("T")


class MalformedJSON(InvalidInput):
    """The body is not JSON at all (400), as opposed to JSON with a wrong field (422)."""


async def decode_body(request: Request, kind: type[T]) -> T:
    return decode(await request.body(), kind)


def decode(body: bytes, kind: type[T]) -> T:
    """`body` as `kind`, strictly; blocking (an Add's 30 MiB take a worker thread's time,
    never the event loop's, where /health is answered)."""
    try:
        return msgspec.json.decode(body, type=kind, strict=True)
    except msgspec.ValidationError as exc:
        raise InvalidInput(str(exc).replace("`$.", "`").replace("`$`", "`body`")) from None
    except msgspec.DecodeError as exc:
        raise MalformedJSON(f"request body is not valid JSON: {exc}") from None
