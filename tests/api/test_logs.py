"""The text log format keeps what the JSON format carries (an access line's fields), and is
what a terminal gets unless a format is set."""

from __future__ import annotations

import io
import logging

import pytest

from api.logs import JsonFormatter, TextFormatter, log_config, log_format
from codemem.config import Settings


def test_text_access_lines_keep_method_route_status_and_ms() -> None:
    record = logging.LogRecord("codemem.access", logging.INFO, __file__, 1, "request", None, None)
    record.__dict__.update(method="POST", route="/search", status=200, ms=12.5)
    line = TextFormatter().format(record)
    assert line.endswith(f" INFO codemem.access [{record.process}] request method=POST route=/search status=200 ms=12.5")


def test_text_lines_without_extras_are_unchanged() -> None:
    record = logging.LogRecord("codemem", logging.WARNING, __file__, 1, "disk %s", ("full",), None)
    assert TextFormatter().format(record).endswith(f"WARNING codemem [{record.process}] disk full")


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize("setting, tty, chosen", [
    ("auto", True, "text"), ("auto", False, "json"), ("json", True, "json"), ("text", False, "text"),
])
def test_logs_are_text_in_a_terminal_and_json_elsewhere_unless_set(setting: str, tty: bool, chosen: str) -> None:
    assert log_format(setting, _Stream(tty)) == chosen


def test_by_default_a_server_in_a_terminal_logs_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stderr", _Stream(True))
    settings = Settings.from_env({})
    assert log_config(settings)["formatters"]["default"]["()"] is TextFormatter
    monkeypatch.setattr("sys.stderr", _Stream(False))
    assert log_config(settings)["formatters"]["default"]["()"] is JsonFormatter
