"""Admission control: past a bound of requests in flight, answer 503 with Retry-After; within
it, optionally, at most `threads` requests of each kind are worked on at once.

A platform retries 429/5xx with backoff; a request queued behind hundreds of others only
grows every caller's latency. The bounds default above what the Coding track sends at once,
so an evaluation is never refused; a runaway client is.

The decision is taken on the event loop before any work and before the body is read, so a
refusal costs no thread and no model time. Each kind gets its own `threads` worker threads
(`Server.add_threads`, `search_threads`; 0: anyio's shared pool of 40), the admitted rest
waiting on the event loop holding nothing. In one shared pool, Searches waiting in numbers
held most threads and Adds ran a few at a time, each group commit small; a pool each keeps
Searches from starving Adds.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TypeVar

from anyio import CapacityLimiter, to_thread
from litestar.exceptions import ServiceUnavailableException

RETRY_AFTER_S = 2
T = TypeVar("T")


class Admission:
    """Counts the requests of one kind in flight (handlers share one event loop) and runs
    their work on at most `threads` threads at once (0: on anyio's shared pool)."""

    def __init__(self, kind: str, limit: int, threads: int) -> None:
        self.kind = kind
        self.limit = limit  # 0: unbounded
        self.threads = threads
        self.inflight = 0
        self.refused = 0
        self._limiter: CapacityLimiter | None = None  # made on the event loop, at first use

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Admit one request (503 when `limit` are in flight) for the block's duration."""
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

    async def run(self, fn: Callable[..., T], *args: object) -> T:
        """`fn(*args)` on a worker thread, once one of this kind's `threads` is free."""
        if self._limiter is None and self.threads:
            self._limiter = CapacityLimiter(self.threads)
        return await to_thread.run_sync(fn, *args, limiter=self._limiter)


class ByteBudget:
    """At most `limit` bytes of Add bodies read, parsed and stored at once; the Adds beyond
    it wait, in arrival order, with their bodies unread (the server stops reading a socket
    whose body nobody asked for, so a waiting Add holds a connection and no memory).

    An Add holds a few times its body while it is parsed and stored, and a glibc process
    keeps what it once held: with 32 Adds of 30 MiB in flight at once the server reached
    4.3 GB. Bounding the bytes bounds that; the contract gives an Add 30 minutes, so the
    rest queue rather than being refused. A body larger than the bound is worked on alone.
    A request without a Content-Length counts as the largest body allowed.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit  # 0: unbounded
        self.held = 0
        self._queue: deque[tuple[int, asyncio.Future[None]]] = deque()

    @property
    def waiting(self) -> int:
        return len(self._queue)

    @property
    def waiting_bytes(self) -> int:
        return sum(size for size, _ in self._queue)

    @asynccontextmanager
    async def hold(self, size: int) -> AsyncIterator[None]:
        """Hold `size` bytes of the budget for the block, waiting for them first if need be."""
        size = min(size, self.limit) if self.limit else 0
        if self._queue or self.held + size > self.limit:
            granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            entry = (size, granted)
            self._queue.append(entry)
            try:
                await granted
            except BaseException:  # the client went away while waiting
                if granted.done() and not granted.cancelled():
                    self._release(size)
                elif entry in self._queue:
                    self._queue.remove(entry)
                    self._grant()
                raise
        else:
            self.held += size
        try:
            yield
        finally:
            self._release(size)

    def _release(self, size: int) -> None:
        self.held -= size
        self._grant()

    def _grant(self) -> None:
        while self._queue and (self.held == 0 or self.held + self._queue[0][0] <= self.limit):
            size, granted = self._queue.popleft()
            if granted.done():  # cancelled: its request is gone
                continue
            self.held += size
            granted.set_result(None)
