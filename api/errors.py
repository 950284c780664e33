"""The one place where errors become HTTP responses: `{"detail": {"reason": ...}}`.

No stack trace, header value or stored content ever reaches a response body.
"""

from __future__ import annotations

import logging

from litestar import MediaType, Request, Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.status_codes import (
    HTTP_400_BAD_REQUEST,
    HTTP_409_CONFLICT,
    HTTP_413_REQUEST_ENTITY_TOO_LARGE,
    HTTP_422_UNPROCESSABLE_ENTITY,
    HTTP_500_INTERNAL_SERVER_ERROR,
)

from api.bodies import MalformedJSON
from codemem.errors import (
    CodememError,
    Conflict,
    InvalidInput,
    NotFound,
    PayloadTooLarge,
)

log = logging.getLogger("codemem.api")


def error_response(status: int, reason: str, headers: dict[str, str] | None = None) -> Response[dict[str, dict[str, str]]]:
    return Response(
        {"detail": {"reason": reason}}, status_code=status, media_type=MediaType.JSON, headers=headers
    )


def core_error_status(exc: CodememError) -> int:
    if isinstance(exc, MalformedJSON):
        return HTTP_400_BAD_REQUEST
    if isinstance(exc, PayloadTooLarge):
        return HTTP_413_REQUEST_ENTITY_TOO_LARGE
    if isinstance(exc, InvalidInput):
        return HTTP_422_UNPROCESSABLE_ENTITY
    if isinstance(exc, Conflict):
        return HTTP_409_CONFLICT
    if isinstance(exc, NotFound):
        return 404
    return HTTP_500_INTERNAL_SERVER_ERROR


def handle_core_error(_: Request, exc: CodememError) -> Response:
    return error_response(core_error_status(exc), exc.reason)


def handle_validation(_: Request, exc: ValidationException) -> Response:
    """A path or query parameter did not validate: say which."""
    reasons = []
    for item in exc.extra if isinstance(exc.extra, list) else []:
        if isinstance(item, dict) and item.get("message"):
            key = item.get("key")
            reasons.append(f"{item['message']}" + (f" (field: {key})" if key else ""))
    return error_response(HTTP_422_UNPROCESSABLE_ENTITY, "; ".join(reasons) or str(exc.detail))


def handle_http(request: Request, exc: HTTPException) -> Response:
    reason = str(exc.detail) or "request failed"
    limit = request.app.request_max_body_size
    if exc.status_code == HTTP_413_REQUEST_ENTITY_TOO_LARGE and isinstance(limit, int) and limit:
        reason = (f"the request body is over the {limit:,} bytes ({limit / 2**20:g} MiB) this server accepts "
                  "(CODEMEM_MAX_BODY_BYTES); send fewer messages per Add")
    return error_response(exc.status_code, reason, exc.headers)


def handle_unexpected(request: Request, exc: Exception) -> Response:
    # The route template, not the path: a path holds the user id.
    log.error("unhandled %s on %s %s", type(exc).__name__, request.method,
              request.scope.get("path_template", "?"), exc_info=exc)
    return error_response(HTTP_500_INTERNAL_SERVER_ERROR, "internal error; the request can be retried")
