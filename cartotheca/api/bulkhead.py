"""cartotheca.api.bulkhead: a per-process bound on heavy map-server work (OWS, CSW, tiles).

Requests share one pool of ``THREAD_POOL_SIZE`` threads, taken first come, first served. Maps,
tiles, features and records cost far more CPU than a catalogue read, so under load they would
fill every thread and a list of resources would queue behind them. Heavy requests therefore
run at most ``OWS_CONCURRENCY`` at a time per process; the others wait here, on the event loop
and holding no thread, at most ``OWS_QUEUE`` of them and each at most ``OWS_QUEUE_SECONDS``,
before they are answered 503 with ``Retry-After``. The threads left over stay free for the
catalogue API.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from cartotheca.api.loop_limiter import LoopLimiter
from cartotheca.settings import Settings


class Overloaded(Exception):
    """No slot for a heavy request: the waiting places are all taken, or the wait ran out."""


class Bulkhead:
    def __init__(self, concurrency: int, queue: int, wait_seconds: float):
        self.concurrency, self.queue, self.wait_seconds = concurrency, queue, wait_seconds
        self.waiting = 0
        self._slots = LoopLimiter(concurrency)

    @classmethod
    def from_settings(cls, settings: Settings) -> Bulkhead:
        return cls(settings.ows_concurrency, settings.OWS_QUEUE, settings.OWS_QUEUE_SECONDS)

    @property
    def running(self) -> int:
        return self._slots.borrowed

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one of the slots for the block; ``Overloaded`` if none is had in time."""
        limiter = self._slots.current()
        token = object()  # one borrower per request (the limiter counts borrowers, not tasks)
        try:
            limiter.acquire_on_behalf_of_nowait(token)
        except anyio.WouldBlock:
            await self._wait(limiter, token)
        try:
            yield
        finally:
            limiter.release_on_behalf_of(token)

    async def _wait(self, limiter: anyio.CapacityLimiter, token: object) -> None:
        if self.waiting >= self.queue:
            raise Overloaded()
        self.waiting += 1
        acquired = False
        try:
            with anyio.move_on_after(self.wait_seconds):
                await limiter.acquire_on_behalf_of(token)
                acquired = True
        finally:
            self.waiting -= 1
        if not acquired:
            raise Overloaded()
