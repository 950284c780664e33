"""The core's error hierarchy. The HTTP edge maps each class to one status code."""

from __future__ import annotations


class CodememError(Exception):
    """Base of every error the core raises on purpose."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class InvalidInput(CodememError):
    """The caller sent something malformed; `reason` names the field."""


class PayloadTooLarge(InvalidInput):
    """A request or one of its parts is over a documented size limit."""


class Conflict(CodememError):
    """The same request is still being processed elsewhere; retry later."""


class NotFound(CodememError):
    """The named thing does not exist (or is not visible to this user)."""


class StoreMismatch(CodememError):
    """The data directory was written with another embedding model or schema."""
