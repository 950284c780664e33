"""The text log format keeps what the JSON format carries: an access line's fields."""

from __future__ import annotations

import logging

from api.logs import TextFormatter


def test_text_access_lines_keep_method_route_status_and_ms() -> None:
    record = logging.LogRecord("codemem.access", logging.INFO, __file__, 1, "request", None, None)
    record.__dict__.update(method="POST", route="/search", status=200, ms=12.5)
    line = TextFormatter().format(record)
    assert line.endswith(f" INFO codemem.access [{record.process}] request method=POST route=/search status=200 ms=12.5")


def test_text_lines_without_extras_are_unchanged() -> None:
    record = logging.LogRecord("codemem", logging.WARNING, __file__, 1, "disk %s", ("full",), None)
    assert TextFormatter().format(record).endswith(f"WARNING codemem [{record.process}] disk full")
