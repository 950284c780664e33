"""The rule every training-data builder keeps: an evaluation set is never training data."""

from __future__ import annotations

from pathlib import Path

# The validation sets in ../shared/data, refused as inputs whatever the command line says.
EXCLUDED = ("swe-contextbench-lite", "past-fixes-dev", "locomo-dev")


def refuse_evaluation_data(path: Path) -> None:
    """Stop (SystemExit) where `path` names one of the validation sets."""
    if any(name in str(path) for name in EXCLUDED):
        raise SystemExit(f"refusing {path}: an evaluation set is never training data")
