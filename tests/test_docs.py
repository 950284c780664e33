"""The README documents every CLI command, every setting and every endpoint."""

from __future__ import annotations

from pathlib import Path

import pytest

from api.app import create_app
from api.memoryarena import env_names as memoryarena_env_names
from cli.main import build_parser
from codemem.config import env_names

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def _commands() -> list[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return sorted(sub.choices)  # type: ignore[arg-type]


@pytest.mark.parametrize("command", _commands())
def test_every_cli_command_is_in_the_readme(command: str) -> None:
    assert f"codemem {command}" in README


@pytest.mark.parametrize("name", env_names() + memoryarena_env_names())
def test_every_setting_is_in_the_readme(name: str) -> None:
    assert f"`{name}`" in README


def _paths() -> list[str]:
    app = create_app()
    return sorted({r.path for r in app.routes if not r.path.startswith("/schema")})


@pytest.mark.parametrize("path", _paths())
def test_every_endpoint_is_in_the_readme(path: str) -> None:
    assert path.replace("{user_id:path}", "{user_id}") in README
