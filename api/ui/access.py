"""Who may see the pages: with `CODEMEM_API_KEY` set, a person gives the key once on the
login page and the browser keeps a token derived from it in an HttpOnly, SameSite=Strict
cookie; every other page needs that cookie. Forms that change anything carry a CSRF token
(Litestar's double-submit CSRF middleware, mounted on the /ui router only, so the JSON API
keeps its header auth and its clients send no token).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets

from litestar.config.csrf import CSRFConfig
from litestar.connection import ASGIConnection
from litestar.exceptions import NotAuthorizedException
from litestar.handlers.base import BaseRouteHandler

COOKIE = "codemem_ui"
CSRF_COOKIE = "codemem_csrf"
# Shared by the worker processes of one `serve` (each builds its own app), so a form served
# by one worker is accepted by another; set once by `share_secret()` before they start.
SECRET_ENV = "CODEMEM_UI_SECRET"
UI_PATH = "/ui"


def session_token(api_key: str) -> str:
    """What the cookie holds: derived from the key, so the key itself never sits in a cookie."""
    return hmac.new(api_key.encode(), b"codemem-ui-session", hashlib.sha256).hexdigest()


def require_login(connection: ASGIConnection, _: BaseRouteHandler) -> None:
    """Guard: passes when no key is configured, else needs the login cookie."""
    expected: str | None = connection.app.state.api_key
    if not expected:
        return
    given = connection.cookies.get(COOKIE, "")
    if not hmac.compare_digest(given.encode(), session_token(expected).encode()):
        raise NotAuthorizedException(detail="log in with the API key")


def share_secret() -> None:
    """Before spawning workers: one CSRF secret for all of them."""
    os.environ.setdefault(SECRET_ENV, secrets.token_hex(32))


def csrf_config(api_key: str | None) -> CSRFConfig:
    secret = os.environ.get(SECRET_ENV) or (
        hmac.new(api_key.encode(), b"codemem-ui-csrf", hashlib.sha256).hexdigest() if api_key
        else secrets.token_hex(32))
    return CSRFConfig(secret=secret, cookie_name=CSRF_COOKIE, cookie_path=UI_PATH, cookie_httponly=True,
                      cookie_samesite="strict")
