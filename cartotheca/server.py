"""cartotheca.server: how ``cartotheca serve`` runs uvicorn, with limits against hostile clients.

uvicorn's httptools protocol accepts request headers of any size and number (httptools buffers a
whole header value before calling back, so a 20 MB header costs 20 MB), never times out a
connection whose headers never finish (the keep-alive timer stops at the first byte, and a fresh
connection has none), and answers ``--limit-concurrency`` overload with a bare 503 that tells the
client nothing about when to come back. ``LimitedHttpToolsProtocol`` adds those three limits to
uvicorn's own protocol; everything else (parsing, flow control, pipelining) stays uvicorn's.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from dataclasses import dataclass
from typing import Any

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from cartotheca.settings import Settings

logger = logging.getLogger("uvicorn.error")

# Bytes counted per header besides its name and value: ": " and CRLF.
HEADER_OVERHEAD = 4
# Seconds a connection is still read, the bytes dropped, after its 431: closing it with the rest
# of the oversized request unread would make the kernel reset it, and the reset can overtake
# the 431 on the way to the client.
LINGER_SECONDS = 2.0


@dataclass(frozen=True)
class ServerLimits:
    """What one server process lets a client do; see the README's "Limits" paragraph."""

    limit_concurrency: int | None  # open connections or running requests per process; None: no limit
    retry_after: int  # seconds advertised in Retry-After when overloaded
    keep_alive_timeout: int  # seconds an idle keep-alive connection is kept open
    max_header_bytes: int  # request line and headers together
    max_header_count: int
    header_timeout: float  # seconds from connection (or end of last response) to complete headers

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> ServerLimits:
        values = dict(
            limit_concurrency=settings.LIMIT_CONCURRENCY or None,
            retry_after=settings.OVERLOAD_RETRY_AFTER,
            keep_alive_timeout=settings.KEEP_ALIVE_TIMEOUT,
            max_header_bytes=settings.MAX_REQUEST_HEADER_BYTES,
            max_header_count=settings.MAX_REQUEST_HEADERS,
            header_timeout=settings.REQUEST_HEADER_TIMEOUT,
        )
        values.update({k: v for k, v in overrides.items() if v is not None})
        values["limit_concurrency"] = values["limit_concurrency"] or None  # 0 means no limit
        return cls(**values)


def uvicorn_options(limits: ServerLimits) -> dict[str, Any]:
    """The ``uvicorn.run`` keywords that apply ``limits``.

    The protocol is passed as a ``functools.partial`` of an importable class so that it pickles
    into the worker processes uvicorn spawns with ``--workers``.
    """
    return {
        "http": functools.partial(LimitedHttpToolsProtocol, limits=limits),
        "limit_concurrency": limits.limit_concurrency,
        "timeout_keep_alive": limits.keep_alive_timeout,
    }


class HeaderLimitExceeded(Exception):
    """Raised from a parser callback; httptools stops parsing and uvicorn asks for a 400, which
    ``LimitedHttpToolsProtocol.send_400_response`` turns into the 431 it stands for."""


def _plain_response(status: int, message: str, default_headers: list[tuple[bytes, bytes]]) -> bytes:
    body = message.encode("ascii")
    lines = [STATUS_LINE[status]]
    for name, value in [*default_headers, (b"content-type", b"text/plain; charset=utf-8"),
                        (b"content-length", str(len(body)).encode("ascii")),
                        (b"connection", b"close")]:
        lines.extend([name, b": ", value, b"\r\n"])
    lines.extend([b"\r\n", body])
    return b"".join(lines)


def overloaded_app(retry_after: int):
    """The ASGI app answering requests over the concurrency limit: 503 with Retry-After, and the
    connection closed so that its slot is free again."""
    body = b"Service Unavailable: the server is busy, retry later."
    headers = [(b"content-type", b"text/plain; charset=utf-8"),
               (b"content-length", str(len(body)).encode("ascii")),
               (b"retry-after", str(retry_after).encode("ascii")),
               (b"connection", b"close")]

    async def app(scope, receive, send) -> None:
        await send({"type": "http.response.start", "status": 503, "headers": headers})
        await send({"type": "http.response.body", "body": body, "more_body": False})

    return app


class LimitedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with bounded headers, a header read timeout and a 503 that
    carries Retry-After."""

    def __init__(self, *args: Any, limits: ServerLimits, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.limits = limits
        # uvicorn's own check would answer with its bare 503; ours runs in on_headers_complete.
        self.limit_concurrency = None
        self.overloaded_app = overloaded_app(limits.retry_after)
        self.reading_headers = True
        self.header_bytes_received = 0  # raw bytes while the headers are incomplete
        self.header_bytes = 0  # request line and headers parsed so far
        self.header_count = 0
        self.header_limit_exceeded = False
        self.rejected = False
        self.header_timer: asyncio.TimerHandle | None = None

    # -- the header read timeout ---------------------------------------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_timer()
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.reading_headers and not self.pipeline:
            self._arm_header_timer()

    def _arm_header_timer(self) -> None:
        self._cancel_header_timer()
        self.header_timer = self.loop.call_later(self.limits.header_timeout, self._header_timeout)

    def _cancel_header_timer(self) -> None:
        if self.header_timer is not None:
            self.header_timer.cancel()
            self.header_timer = None

    def _header_timeout(self) -> None:
        self.header_timer = None
        answering = self.cycle is not None and not self.cycle.response_complete
        if self.transport.is_closing() or not self.reading_headers or answering or self.pipeline:
            return
        if self.header_bytes_received:
            # A request was started and never finished: say so before hanging up. An idle
            # connection is closed silently, as uvicorn closes idle keep-alive connections.
            logger.warning("Request headers not received within %ss.", self.limits.header_timeout)
            self.transport.write(_plain_response(408, "Request headers not received in time.",
                                                 self.server_state.default_headers))
        self.transport.close()

    # -- header size and count -----------------------------------------------------------------
    def data_received(self, data: bytes) -> None:
        if self.rejected:
            return  # lingering after a 431
        if self.reading_headers:
            self.header_bytes_received += len(data)
        super().data_received(data)
        # httptools keeps a header that has not ended yet in memory: bound it before it ends.
        if (self.reading_headers and not self.transport.is_closing()
                and self.header_bytes_received > self.limits.max_header_bytes):
            self.header_limit_exceeded = True
            self.send_400_response("")

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.reading_headers = True
        self.header_bytes = self.header_count = 0

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        self._count_header_bytes(len(url))

    def on_header(self, name: bytes, value: bytes) -> None:
        self.header_count += 1
        if self.header_count > self.limits.max_header_count:
            self.header_limit_exceeded = True
            raise HeaderLimitExceeded
        self._count_header_bytes(len(name) + len(value) + HEADER_OVERHEAD)
        super().on_header(name, value)

    def _count_header_bytes(self, size: int) -> None:
        self.header_bytes += size
        if self.header_bytes > self.limits.max_header_bytes:
            self.header_limit_exceeded = True
            raise HeaderLimitExceeded

    def on_headers_complete(self) -> None:
        self.reading_headers = False
        self.header_bytes_received = 0
        self._cancel_header_timer()
        limit = self.limits.limit_concurrency
        overloaded = limit is not None and (len(self.connections) >= limit or len(self.tasks) >= limit)
        if overloaded:
            logger.warning("Exceeded concurrency limit.")
        # uvicorn starts the request with self.app; swap it for this request only.
        self.app = self.overloaded_app if overloaded else self.config.loaded_app
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self.reading_headers = True
        if self.cycle is not None and self.cycle.response_complete:
            # Answered before its body was read (a 413, say): the next request starts now.
            self._arm_header_timer()

    def send_400_response(self, msg: str) -> None:
        if not self.header_limit_exceeded:
            super().send_400_response(msg)
            return
        logger.warning("Request headers over the limit (%d bytes or %d headers).",
                       self.limits.max_header_bytes, self.limits.max_header_count)
        self._cancel_header_timer()
        self.rejected = True
        self.transport.write(_plain_response(
            431, "Request Header Fields Too Large", self.server_state.default_headers))
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.loop.call_later(LINGER_SECONDS, self.transport.close)
