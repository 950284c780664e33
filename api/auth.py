"""API-key auth: `Authorization: Token|Bearer <key>` or `X-Api-Key: <key>`, one shared secret."""

from __future__ import annotations

import hmac

from litestar.connection import ASGIConnection
from litestar.exceptions import NotAuthorizedException
from litestar.handlers.base import BaseRouteHandler

_SCHEMES = ("token", "bearer")


def presented_key(connection: ASGIConnection) -> str | None:
    header = connection.headers.get("authorization")
    if header:
        scheme, _, value = header.strip().partition(" ")
        if scheme.lower() in _SCHEMES and value.strip():
            return value.strip()
    key = connection.headers.get("x-api-key")
    return key.strip() if key else None


def require_api_key(connection: ASGIConnection, _: BaseRouteHandler) -> None:
    """Guard: passes when no key is configured, else needs the key in a supported header."""
    expected: str | None = connection.app.state.api_key
    if not expected:
        return
    given = presented_key(connection)
    # compare_digest on bytes keeps the comparison constant-time for any characters.
    if given is None or not hmac.compare_digest(given.encode(), expected.encode()):
        raise NotAuthorizedException(
            detail="missing or wrong API key",
            headers={"WWW-Authenticate": 'Bearer realm="codemem"'},
        )
