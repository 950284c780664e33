"""Admission control: past a bound of requests in flight, answer 503 with Retry-After.

A platform retries 429/5xx with backoff; a request queued behind hundreds of others only
grows every caller's latency (on 2 cores, 64 Adds and 256 Searches in flight already wait
~23 s each, see eval/load.py). The bounds default above what the Coding track sends at
once, so an evaluation is never refused; a runaway client is.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from litestar.exceptions import ServiceUnavailableException

RETRY_AFTER_S = 2


class Admission:
    """Counts the requests of one kind in flight (handlers share one event loop)."""

    def __init__(self, kind: str, limit: int) -> None:
        self.kind = kind
        self.limit = limit  # 0: unbounded
        self.inflight = 0
        self.refused = 0

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        if self.limit and self.inflight >= self.limit:
            self.refused += 1
            raise ServiceUnavailableException(
                detail=f"over capacity: {self.inflight} {self.kind} requests in flight; retry shortly",
                headers={"Retry-After": str(RETRY_AFTER_S)},
            )
        self.inflight += 1
        try:
            yield
        finally:
            self.inflight -= 1
