"""The contract's API key: which headers carry it and how a presented key is compared.

`Authorization: Token <key>`, `Authorization: Bearer <key>` or `X-Api-Key: <key>`, one shared
secret. Every edge that serves memory over HTTP (the Add/Search API, MCP's streamable HTTP)
reads it the same way, so a client configured for one works with the other.
"""

from __future__ import annotations

import hmac

SCHEMES = ("token", "bearer")


def presented_key(authorization: str | None, x_api_key: str | None) -> str | None:
    """The key a request presents in its `Authorization` or `X-Api-Key` header, or None."""
    if authorization:
        scheme, _, value = authorization.strip().partition(" ")
        if scheme.lower() in SCHEMES and value.strip():
            return value.strip()
    return x_api_key.strip() if x_api_key and x_api_key.strip() else None


def key_matches(given: str | None, expected: str) -> bool:
    """Whether `given` is the key; constant-time for keys of any characters."""
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())
