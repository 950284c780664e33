"""`python -m cli ...` runs the `codemem` command."""

from __future__ import annotations

from cli.main import run

run()
