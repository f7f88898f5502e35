"""cartotheca.api.multipart: stream a multipart upload straight to its staging.

Starlette's form parser spools files in the temporary directory and only then hands them over;
uploads of data files instead go part by part to their staging (a folder, or objects in the
object store) as the bytes arrive, and the size limit is enforced while reading, so an
oversized upload is refused without ever being held in memory or written beyond the limit.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from python_multipart.multipart import MultipartParser, MultipartState, parse_options_header
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from cartotheca import xmlsafe
from cartotheca.catalogue.staging import FolderStaging, StagedPart, Staging
from cartotheca.catalogue.upload_limits import size_label
from cartotheca.errors import InvalidInput, LimitExceeded, ParseError, StoreUnavailable, UnsupportedMediaType
from cartotheca.filestore import ObjectWriter

MAX_TEXT_FIELD = 1 << 20  # a text part (permissions JSON, flags) larger than this is refused
DRAIN_FACTOR = 2  # after a refusal, read at most this many times the limit before hanging up
# Parts sent only as a convenience copy of base_file (geonodectl sends a zip twice).
DUPLICATE_PARTS = ("zip_file",)


@dataclass
class StagedFile:
    field: str
    filename: str
    relative: str  # path within the staging
    size: int = 0


@dataclass
class StagedForm:
    staging: Staging
    fields: dict[str, str] = field(default_factory=dict)
    files: dict[str, StagedFile] = field(default_factory=dict)
    total: int = 0

    def path(self, name: str) -> Path:
        """The file of the part ``name``, for a form staged in a folder."""
        path = self.staging.local_path(self.files[name].relative)
        if path is None:
            raise TypeError("the form was not staged in a folder")
        return path

    def parts(self) -> dict[str, StagedPart]:
        return {name: StagedPart(self.staging, staged.relative) for name, staged in self.files.items()}


def safe_filename(raw: str, fallback: str) -> str:
    """The base name of a client's file name, without directories or control characters."""
    name = raw.replace("\\", "/").rsplit("/", 1)[-1]
    name = "".join(c for c in unicodedata.normalize("NFC", name) if unicodedata.category(c)[0] != "C")
    name = re.sub(r"\s+", " ", name).strip().lstrip(".")
    return name[:200] or fallback


class TooLarge(LimitExceeded):
    code = "total_upload_size_exceeded"


def _too_large(limit: int) -> str:
    return f"Total upload size exceeds {size_label(limit)}. Please try again with smaller files."


class _Receiver:
    """python-multipart callbacks writing each part where it belongs."""

    def __init__(self, form: StagedForm, limit: int):
        self.form, self.limit = form, limit
        self.headers: dict[bytes, bytes] = {}
        self.header_field = b""
        self.header_value = b""
        self.name = ""
        self.text: bytearray | None = None
        self.handle: ObjectWriter | None = None
        self.current: StagedFile | None = None
        self.error: Exception | None = None

    def callbacks(self) -> dict:
        return {"on_part_begin": self.on_part_begin, "on_part_data": self.on_part_data,
                "on_part_end": self.on_part_end, "on_header_field": self.on_header_field,
                "on_header_value": self.on_header_value, "on_header_end": self.on_header_end,
                "on_headers_finished": self.on_headers_finished}

    def on_part_begin(self) -> None:
        self.headers = {}

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        self.header_field += data[start:end]

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        self.header_value += data[start:end]

    def on_header_end(self) -> None:
        self.headers[self.header_field.lower()] = self.header_value
        self.header_field = self.header_value = b""

    def on_headers_finished(self) -> None:
        _, options = parse_options_header(self.headers.get(b"content-disposition", b""))
        try:
            self.name = options.get(b"name", b"").decode("utf-8")
            filename = options.get(b"filename")
            filename = filename.decode("utf-8") if filename is not None else None
        except UnicodeDecodeError:
            raise ParseError("multipart part names must be UTF-8") from None
        if not re.fullmatch(r"[A-Za-z0-9_\-\[\]]{1,64}", self.name):
            raise InvalidInput(f"unexpected form field name {self.name[:64]!r}")
        self.text, self.handle, self.current = None, None, None
        if filename is None:
            self.text = bytearray()
            return
        if self.name in self.form.files:
            raise InvalidInput(f"{self.name}: sent more than once")
        if self.name in DUPLICATE_PARTS:
            return  # counted against the limit, not stored
        staged = StagedFile(self.name, safe_filename(filename, self.name),
                            f"{self.name}/{safe_filename(filename, self.name)}")
        self.handle = self.form.staging.open(staged.relative)
        self.current = staged
        self.form.files[self.name] = staged

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        size = end - start
        self.form.total += size
        if self.form.total > self.limit:
            raise TooLarge(_too_large(self.limit))
        if self.text is not None:
            if len(self.text) + size > MAX_TEXT_FIELD:
                raise InvalidInput(f"{self.name}: a text field may hold at most {MAX_TEXT_FIELD} bytes")
            self.text += data[start:end]
        elif self.handle is not None:
            self.handle.write(data[start:end])
            assert self.current is not None
            self.current.size += size

    def on_part_end(self) -> None:
        if self.text is not None:
            try:
                value = self.text.decode("utf-8")
            except UnicodeDecodeError:
                raise ParseError(f"{self.name}: form text must be UTF-8") from None
            xmlsafe.check_text(value, self.name)
            self.form.fields[self.name] = value
        if self.handle is not None:
            handle, self.handle = self.handle, None
            handle.commit()
        self.text = None

    def close(self) -> None:
        """After an error: the part being written is dropped."""
        if self.handle is not None:
            handle, self.handle = self.handle, None
            handle.abort()


def declared_length(request: Request) -> int:
    """The body size the client announced (Content-Length), 0 when it sent none."""
    declared = request.headers.get("content-length", "")
    return int(declared) if declared.isdigit() else 0


def check_declared_size(request: Request, limit: int) -> None:
    """Refuse a body announced larger than ``limit`` before reading any of it."""
    if declared_length(request) > limit:
        raise TooLarge(_too_large(limit))


async def stage_multipart(request: Request, staging: Staging | Path, limit: int, *,
                          hang_up: bool = False) -> StagedForm:
    """Receive the request's multipart body into ``staging`` (an upload's, or a folder given by
    its path); on any error, or when the client goes away, what was staged is removed.

    With ``hang_up`` the limit bounds the whole body: a declared Content-Length over it is
    refused before a byte of the body is read, and a body without one (chunked) as soon as the
    bytes received pass it; nothing more is read, and the caller answers with
    ``Connection: close`` so the server stops receiving. Without it the parts' data is bounded
    and an oversized body is read on a little (``DRAIN_FACTOR``) so the client sees the answer.
    A remote staging is written as the parts arrive, from a worker thread: the event loop
    never waits on the object store.
    """
    content_type, options = parse_options_header(request.headers.get("content-type", ""))
    if content_type != b"multipart/form-data" or b"boundary" not in options:
        raise UnsupportedMediaType("An upload must be sent as multipart/form-data")
    allowance = 0 if hang_up else 64 * 1024  # parts' headers take some room
    if declared_length(request) > limit + allowance:
        if not hang_up:
            await drain(request, 0, limit * DRAIN_FACTOR)
        raise TooLarge(_too_large(limit))
    target = FolderStaging(staging) if isinstance(staging, Path) else staging
    form = StagedForm(target)
    await _call(target, target.create)
    receiver = _Receiver(form, limit)
    parser = MultipartParser(options[b"boundary"], receiver.callbacks())
    received = 0
    try:
        async for chunk in request.stream():
            received += len(chunk)
            if hang_up and received > limit:
                raise TooLarge(_too_large(limit))
            await _call(target, parser.write, chunk)
        await _call(target, parser.finalize)
        if parser.state not in (MultipartState.END, MultipartState.END_BOUNDARY):
            # A body cut short would otherwise pass as a shorter, valid-looking file.
            raise ParseError("The multipart body is incomplete (no closing boundary)")
    except BaseException as exc:
        await discard(target, receiver)
        if not isinstance(exc, Exception):
            raise
        if isinstance(exc, TooLarge):
            if not hang_up:
                await drain(request, received, limit * DRAIN_FACTOR)
            raise
        if isinstance(exc, (InvalidInput, UnsupportedMediaType, StoreUnavailable)):
            raise
        raise ParseError(f"The multipart body could not be read: {exc}") from None
    return form


async def discard(staging: Staging, receiver: _Receiver | None = None) -> None:
    """Drop the part being received and everything staged, even while the request is being
    cancelled (the client went away)."""

    def remove() -> None:
        if receiver is not None:
            receiver.close()
        staging.remove()

    with anyio.CancelScope(shield=True):
        await _call(staging, remove)


async def _call(staging: Staging, function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)``: in a worker thread when it may wait on a remote staging."""
    if staging.remote:
        return await run_in_threadpool(function, *args)
    return function(*args)


async def drain(request: Request, received: int, cap: int | None = None) -> bool:
    """Read what the client is still sending (without keeping it) so it gets the answer
    instead of a reset connection; stop at ``cap`` bytes. True when the body was read to its end."""
    try:
        async for chunk in request.stream():
            received += len(chunk)
            if cap is not None and received > cap:
                return False
    except Exception:
        return False
    return True
