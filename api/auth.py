"""API-key auth: the contract's headers (`codemem.contract.keys`), one shared secret."""

from __future__ import annotations

from litestar.connection import ASGIConnection
from litestar.exceptions import NotAuthorizedException
from litestar.handlers.base import BaseRouteHandler

from codemem.contract.keys import key_matches, presented_key


def require_api_key(connection: ASGIConnection, _: BaseRouteHandler) -> None:
    """Guard: passes when no key is configured, else needs the key in a supported header."""
    expected: str | None = connection.app.state.api_key
    if not expected:
        return
    given = presented_key(connection.headers.get("authorization"), connection.headers.get("x-api-key"))
    if not key_matches(given, expected):
        raise NotAuthorizedException(
            detail="missing or wrong API key",
            headers={"WWW-Authenticate": 'Bearer realm="codemem"'},
        )
