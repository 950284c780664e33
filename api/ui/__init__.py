"""The page for people under /ui: browse, search and curate a memory in the browser.

Server-rendered Jinja templates (autoescaped) and a stylesheet, all in this package: no
script, no CDN, no build step. The pages call the same core as the JSON API.
"""

from __future__ import annotations

from pathlib import Path

from litestar import Router
from litestar.datastructures import ResponseHeader
from litestar.exceptions import NotAuthorizedException, PermissionDeniedException
from litestar.middleware import DefineMiddleware
from litestar.middleware.csrf import CSRFMiddleware
from litestar.plugins.jinja import JinjaTemplateEngine
from litestar.static_files import create_static_files_router
from litestar.template.config import TemplateConfig

from api.ui import filters
from api.ui.access import UI_PATH, csrf_config, share_secret
from api.ui.answers import Answers
from api.ui.pages import LoginController, UiController, error_page, expired_form, to_login
from codemem.errors import CodememError

__all__ = ["Answers", "router", "share_secret", "static_router", "template_config"]

HERE = Path(__file__).parent
# Memory content is untrusted: escaping is the defence, and the policy forbids any script
# and any inline style or handler besides, in case something slipped through.
HEADERS = [
    ResponseHeader(name="Content-Security-Policy",
                   value="default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
                         "base-uri 'none'; frame-ancestors 'none'"),
    ResponseHeader(name="X-Content-Type-Options", value="nosniff"),
    ResponseHeader(name="Referrer-Policy", value="no-referrer"),  # URLs carry user ids and queries
    ResponseHeader(name="Cache-Control", value="no-store"),
]


def _register(engine: JinjaTemplateEngine) -> None:
    engine.engine.filters.update(filters.FILTERS)
    engine.engine.globals.update(filters.GLOBALS)


def template_config() -> TemplateConfig[JinjaTemplateEngine]:
    return TemplateConfig(directory=HERE / "templates", engine=JinjaTemplateEngine, engine_callback=_register)


def router(api_key: str | None) -> Router:
    """The pages, behind the login guard, with CSRF checked on every form post."""
    return Router(
        path="/",
        route_handlers=[UiController, LoginController],
        middleware=[DefineMiddleware(CSRFMiddleware, config=csrf_config(api_key))],
        exception_handlers={NotAuthorizedException: to_login, PermissionDeniedException: expired_form,
                            CodememError: error_page},
        response_headers=HEADERS,
        include_in_schema=False,
    )


def static_router() -> Router:
    """The stylesheets: package files, no memory content, served to the login page too."""
    return create_static_files_router(path=f"{UI_PATH}/static", directories=[HERE / "static"],
                                      include_in_schema=False, name="ui-static")
