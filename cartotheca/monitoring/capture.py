"""cartotheca.monitoring.capture: ASGI middleware recording every request into a memory buffer.

The request path pays for a clock read, a wrapped ``send`` and one ``deque.append``; parsing,
classification and the database write happen later in the collector's thread. It is pure ASGI
(not BaseHTTPMiddleware) so streamed bodies pass through untouched.
"""

from __future__ import annotations

import re
import time
import traceback
from collections import deque
from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

BODY_SNIFF_BYTES = 4096  # OWS POSTs: enough of the XML to find the operation and layer names


@dataclass(slots=True)
class CapturedRequest:
    started: float  # epoch seconds
    duration: float  # seconds
    method: str
    path: str
    query: bytes
    headers: list[tuple[bytes, bytes]]
    client: str | None
    status: int
    response_headers: list[tuple[bytes, bytes]] | None
    size: int
    user: tuple[int, str] | None
    error: tuple[str, str, str] | None  # class, message, stack trace
    body_prefix: bytes | None


class RequestBuffer:
    """Captured requests waiting for the collector; bounded, so a database outage costs the
    oldest records rather than the server's memory."""

    def __init__(self, size: int):
        self._items: deque[CapturedRequest] = deque(maxlen=size)

    def append(self, item: CapturedRequest) -> None:
        self._items.append(item)

    def drain(self) -> list[CapturedRequest]:
        out = []
        pop = self._items.popleft
        try:
            while True:
                out.append(pop())
        except IndexError:
            return out

    def __len__(self) -> int:
        return len(self._items)


class CaptureMiddleware:
    def __init__(self, app: ASGIApp, buffer: RequestBuffer, skip_paths: list[str]):
        self.app = app
        self.buffer = buffer
        self.skip_prefixes = tuple(p for p in skip_paths if not p.startswith("^"))
        self.skip_patterns = [re.compile(p) for p in skip_paths if p.startswith("^")]

    def skipped(self, path: str) -> bool:
        return path.startswith(self.skip_prefixes) or any(p.match(path) for p in self.skip_patterns)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.skipped(scope["path"]):
            await self.app(scope, receive, send)
            return
        started, clock = time.time(), time.perf_counter()
        # The principal dependency leaves the requester in scope["state"]; read it afterwards.
        state = scope.setdefault("state", {})
        response: list[Any] = [0, None, 0]  # status, headers, body bytes

        async def capture_send(message: Message) -> None:
            if message["type"] == "http.response.body":
                response[2] += len(message.get("body", b""))
            elif message["type"] == "http.response.start":
                response[0] = message["status"]
                response[1] = message.get("headers")
            await send(message)

        sniffed: list[bytes] | None = None
        if scope["method"] == "POST" and _is_ows(scope["path"]):
            sniffed = []
            receive = _sniffing(receive, sniffed)
        error = None
        try:
            await self.app(scope, receive, capture_send)
        except Exception as exc:
            error = _describe(exc)
            if not response[0]:
                response[0] = 500
            raise
        finally:
            self.buffer.append(CapturedRequest(
                started, time.perf_counter() - clock, scope["method"], scope["path"],
                scope.get("query_string", b""), scope.get("headers") or [],
                (scope.get("client") or (None,))[0], response[0], response[1], response[2],
                _user(state), error, b"".join(sniffed)[:BODY_SNIFF_BYTES] if sniffed else None,
            ))


def _is_ows(path: str) -> bool:
    return path in ("/ows", "/ows/") or path.startswith("/geoserver/")


def _sniffing(receive: Receive, chunks: list[bytes]) -> Receive:
    async def wrapped() -> Message:
        message = await receive()
        if message["type"] == "http.request" and sum(map(len, chunks)) < BODY_SNIFF_BYTES:
            chunks.append(message.get("body", b"")[:BODY_SNIFF_BYTES])
        return message
    return wrapped


def _user(state: dict[str, Any]) -> tuple[int, str] | None:
    principal = state.get("principal")
    try:
        user = getattr(principal, "user", None)
        return (user.id, user.username) if user is not None else None
    except Exception:  # a detached or expired row: the request is recorded as anonymous
        return None


def _describe(exc: BaseException) -> tuple[str, str, str]:
    cls = type(exc)
    name = cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    return name, str(exc), "".join(traceback.format_exception(exc))
