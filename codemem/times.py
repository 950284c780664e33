"""A memory's two times: when its source happened and when it was stored.

Every row keeps both (`store/schema.py`): `timestamp`, the source's own time (a message's
`timestamp` as sent, a commit's author date, a session's latest message for its card), and
`created_at`, when this service stored the row. What people and rankings see is the source's
time, falling back to the storage time where the source gave none; purging
(`Memory.purge`) goes by the storage time alone, so a 2019 commit imported today is kept
as long as anything else imported today.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import TypeGuard, cast

# The last millisecond a `datetime` can hold (9999-12-31T23:59:59.999Z). Add accepts any
# non-negative int64 as a timestamp; one past this is not a time that can be written.
MAX_MS = 253_402_300_799_999
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def representable(ms: object) -> TypeGuard[int]:
    """Whether `ms` is Unix milliseconds that a date can be written for."""
    return isinstance(ms, int) and not isinstance(ms, bool) and 0 <= ms <= MAX_MS


def source_ms(row: Mapping[str, object]) -> int:
    """The row's own time (its `timestamp`) where it has one that can be written, else when
    it was stored (`created_at`)."""
    ts = row.get("timestamp")
    return ts if representable(ts) else int(cast(int, row["created_at"]))


def latest(stamps: Iterable[int | None]) -> int | None:
    """The latest of `stamps` that can be written (None: none can)."""
    return max((t for t in stamps if representable(t)), default=None)


def iso(ms: int) -> str:
    """`ms` as ISO 8601 in UTC to the millisecond: 2019-03-01T10:00:00.000Z."""
    return _at(ms).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def minute(ms: int) -> str:
    """`ms` as a person reads it: 2019-03-01 10:00 UTC."""
    return _at(ms).strftime("%Y-%m-%d %H:%M UTC")


def _at(ms: int) -> datetime:
    return _EPOCH + timedelta(milliseconds=ms)  # exact: no float, up to MAX_MS
