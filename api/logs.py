"""Logs: one JSON object a line for a collector, one readable line in a terminal
(`log_format`), and never memory content, user ids or keys.

Uvicorn's own access log prints the raw path (`/users/{user_id}` with the id in it) and the
query string; it is replaced by `access_log`, which writes the route template, the status
and the duration. Core modules log events and exception types, never request bodies.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from typing import Any, TextIO

from litestar.types import ASGIApp, Message, Receive, Scope, Send

from api.ui.access import share_secret
from codemem.config import Settings

access = logging.getLogger("codemem.access")

# LogRecord attributes that are not extras a caller passed.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message", "asctime", "taskName", "color_message"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "pid": record.process,
            "msg": record.getMessage(),
        }
        entry.update({k: v for k, v in vars(record).items() if k not in _STANDARD})
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


class TextFormatter(logging.Formatter):
    """One readable line, with a record's extra fields (an access line's method, route,
    status and ms) after the message as key=value."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s [%(process)d] %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        extras = " ".join(f"{k}={v}" for k, v in vars(record).items() if k not in _STANDARD)
        if not extras:
            return line
        head, sep, tail = line.partition("\n")  # a traceback stays below the line
        return f"{head} {extras}{sep}{tail}"


def log_format(setting: str, stream: TextIO | None = None) -> str:
    """"json" or "text": the setting, or for "auto" text where `stream` (stderr) is a
    terminal, a person reading it, and json where it goes to a file or a collector."""
    if setting != "auto":
        return setting
    stream = stream or sys.stderr
    try:
        return "text" if stream.isatty() else "json"
    except (AttributeError, ValueError):  # no stream, or a closed one
        return "json"


def log_config(settings: Settings) -> dict[str, Any]:
    """A `logging.config.dictConfig` for uvicorn and codemem (uvicorn applies it in every
    worker process)."""
    level = settings.server.log_level.upper()
    formatter = {"()": JsonFormatter if log_format(settings.server.log_format) == "json" else TextFormatter}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"default": formatter},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "default", "stream": "ext://sys.stderr"}},
        "loggers": {
            "codemem": {"handlers": ["stderr"], "level": level, "propagate": False},
            "uvicorn": {"handlers": ["stderr"], "level": level, "propagate": False},
            "uvicorn.access": {"handlers": [], "level": "CRITICAL", "propagate": False},
        },
        "root": {"handlers": ["stderr"], "level": "WARNING"},  # libraries: warnings and errors
    }


def access_log(app: ASGIApp) -> ASGIApp:
    """Logs each request as method, route template, status and milliseconds."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500  # if the app fails before it answers

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await app(scope, receive, send_wrapper)
        finally:
            access.info(
                "request",
                extra={"method": scope.get("method"), "route": scope.get("path_template", "?"),
                       "status": status, "ms": round((time.perf_counter() - start) * 1000, 1)},
            )

    return middleware


def prepare_workers(settings: Settings) -> None:
    """Before uvicorn spawns workers: they read their settings from the environment, and
    their request metrics are summed through a shared directory (prometheus_client's
    multiprocess mode)."""
    os.environ.update(settings.to_env())
    share_secret()  # one CSRF secret for the pages of every worker
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="codemem-metrics-")
