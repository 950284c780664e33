"""The shared data (../shared/data, eval/_paths.py) as tests see it: a test that needs it
skips with a clear message when it is missing, and fails with that message under CI=true,
where a missing clone is a broken setup, not a reason to pass."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from eval._paths import SHARED_DATA, SWE_LITE, SWE_LITE_TAR

__all__ = ["SHARED_DATA", "SWE_LITE", "SWE_LITE_TAR", "in_ci", "require"]


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def require(path: Path) -> Path:
    """`path`, or skip (locally) / fail (CI=true) saying where the data was looked for."""
    if path.exists():
        return path
    msg = (f"shared data not found at {path}: clone the shared data beside the repository "
           f"(../shared/data) or set CODEMEM_SHARED_DATA to its data folder")
    if in_ci():
        pytest.fail(f"CI=true and {msg}", pytrace=False)
    pytest.skip(msg)
