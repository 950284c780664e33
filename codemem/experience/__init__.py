"""Trajectory understanding: a session's messages become one experience card and its steps.

``build_experience`` (``codemem.experience.building.builder``) is pure: messages in,
experience out. ``recognise_events`` (``codemem.experience.recognising.message``) is the
per-message recognition of the many renderings of tool traffic it is built on. Both are
loaded on first use, so importing ``codemem.experience.types`` stays as light as the types
themselves.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_LAZY = {
    "build_experience": "codemem.experience.building.builder",
    "recognise_events": "codemem.experience.recognising.message",
}

__all__ = ["build_experience", "recognise_events"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(module), name)
