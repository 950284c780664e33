"""A setting that cannot be used stops every command the same way: one line on stderr naming
the variable (or flag), its value and what it may hold, and exit 2, as other bad input does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def test_the_command_prints_one_line_and_exits_2_not_a_traceback(tmp_path: Path) -> None:
    env = {**os.environ, "CODEMEM_PORT": "abc", "CODEMEM_DATA_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "cli", "memories"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == ["codemem: CODEMEM_PORT='abc': must be a whole number (int)"]
    assert done.stdout == ""


@pytest.mark.parametrize("argv", [
    ["memories"], ["search", "--user-id", "u", "anything"], ["serve"], ["mcp"], ["hook", "claude-code"],
    ["ingest-git", "."], ["purge", "--older-than", "1d"],
])
@pytest.mark.parametrize("name, value, says", [
    ("CODEMEM_PORT", "abc", "CODEMEM_PORT='abc': must be a whole number (int)"),
    ("CODEMEM_WORKERS", "0", "CODEMEM_WORKERS=0: must be at least 1, not 0"),
])
def test_every_command_that_reads_settings_refuses_alike(argv: list[str], name: str, value: str, says: str,
                                                         tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(name, value)
    monkeypatch.setenv("CODEMEM_DATA_DIR", str(tmp_path))
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"codemem: {says}")


def test_serve_refuses_a_bad_memoryarena_variable_before_it_serves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("CODEMEM_MEMORYARENA_TOP_K", "many")
    assert main(["serve", "--data-dir", str(tmp_path), "--port", "0"]) == 2
    assert capsys.readouterr().err.strip() == "codemem: CODEMEM_MEMORYARENA_TOP_K='many': must be a whole number (int)"


def test_a_flag_out_of_range_is_named_as_the_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--data-dir", str(tmp_path), "--port", "70000"]) == 2
    assert capsys.readouterr().err.strip() == "codemem: --port=70000: must be between 0 and 65535, not 70000"
