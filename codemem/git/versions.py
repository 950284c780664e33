"""Version numbers as releases and reports write them (`1.18.22`, `v2.7.5`, `0.2.18`)."""

from __future__ import annotations

# A version number of two to four parts.
VERSION = r"\d+(?:\.\d+){1,3}"


def parse_version(text: str) -> tuple[int, ...]:
    """`"1.18.22"` -> `(1, 18, 22)`, trailing zeros dropped so that 2.7 equals 2.7.0."""
    parts = [int(p) for p in text.split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)
