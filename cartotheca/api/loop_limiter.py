"""cartotheca.api.loop_limiter: a capacity limiter for whichever event loop is running.

An AnyIO ``CapacityLimiter`` belongs to the event loop it was made in. A server runs one loop
for its whole life, but a test client may run the same app in a new loop each time, so the
limiter is made on first use in a loop and made again when the loop changes.
"""

from __future__ import annotations

import asyncio

import anyio


class LoopLimiter:
    def __init__(self, tokens: int):
        self.tokens = tokens
        self._limiter: anyio.CapacityLimiter | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def current(self) -> anyio.CapacityLimiter:
        """The limiter of the running loop (call it from a coroutine)."""
        loop = asyncio.get_running_loop()
        if self._limiter is None or self._loop is not loop:
            self._limiter, self._loop = anyio.CapacityLimiter(self.tokens), loop
        return self._limiter

    @property
    def borrowed(self) -> int:
        """Tokens held now, in the loop that used the limiter last."""
        return 0 if self._limiter is None else self._limiter.borrowed_tokens
