"""cartotheca.filestore: the files the service keeps (documents, thumbnails, rasters, staged uploads).

A ``FileStore`` holds objects under keys: relative POSIX paths such as
``documents/<uuid>/report.pdf`` or ``thumbnails/<uuid>.png``. The embedded default keeps them as
files under ``DATA_DIR`` (``filestore.local``); with ``OBJECT_STORE_URL`` set they are objects
in an S3-compatible bucket (``filestore.s3``), so every node of a cluster reads the same bytes.
Both backends pass the same contract tests. An unreachable store raises ``StoreUnavailable``
(a ``Busy``: 503 with Retry-After), never a bare client error.

Bytes that arrive in pieces (a request body) are written through ``open_writer`` with memory
bounded by one part, whatever the object's size; ``open_file`` reads an object as a seekable
file (a remote one by byte ranges, so reading an archive's directory fetches only that).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol

from cartotheca.errors import InvalidInput

UNSAFE = re.compile(r"[\x00-\x1f\x7f\\]")  # control characters and backslashes name no stored file
CHUNK_BYTES = 64 * 1024


@dataclass(frozen=True)
class ObjectInfo:
    """What a reader needs before the bytes: the size, a quoted entity tag, the modification
    time (seconds since the epoch)."""

    size: int
    etag: str
    mtime: float


class ObjectWriter(Protocol):
    """An object written piece by piece: it appears under its key at ``commit``, whole;
    ``abort`` (after an error) leaves nothing, not even parts a reader cannot see."""

    def write(self, data: bytes) -> None: ...

    def commit(self) -> None: ...

    def abort(self) -> None: ...


class FileStore(Protocol):
    def put(self, key: str, source: BinaryIO) -> None:
        """Store the readable ``source`` under ``key`` (readers never see half an object)."""

    def put_file(self, key: str, path: Path, *, move: bool = False) -> None:
        """Store the local file ``path`` under ``key``; with ``move`` the file is taken (renamed
        into place when it can be, else removed once stored)."""

    def put_bytes(self, key: str, data: bytes) -> None: ...

    def open_writer(self, key: str) -> ObjectWriter:
        """A writer of the object ``key`` for bytes that arrive in pieces."""

    def open_file(self, key: str) -> BinaryIO:
        """The object as a seekable file opened for reading; ``FileNotFoundError`` when there
        is none."""

    def open_range(self, key: str, start: int = 0, stop: int | None = None) -> Iterator[bytes]:
        """The bytes ``start`` up to (not including) ``stop`` of the object, in chunks. The
        object is opened before this returns, so a missing object or an outage raises here,
        before a response has started."""

    def read_bytes(self, key: str) -> bytes | None:
        """The whole object, or None when there is none."""

    def stat(self, key: str) -> ObjectInfo | None:
        """Size, entity tag and time of the object, or None when there is none."""

    def download(self, key: str, target: Path) -> None:
        """Copy the object into the local file ``target``."""

    def delete(self, key: str) -> None:
        """Remove the object; nothing happens when there is none."""

    def delete_prefix(self, prefix: str) -> None:
        """Remove every object whose key starts with ``prefix``."""

    def list_prefix(self, prefix: str) -> list[str]:
        """The keys starting with ``prefix``, sorted."""

    def gdal_path(self, key: str) -> str:
        """A path GDAL opens the object with (a file path, or ``/vsis3/bucket/key``)."""

    def gdal_config(self) -> dict[str, str]:
        """GDAL configuration options (``AWS_S3_ENDPOINT`` ...) that let GDAL open ``gdal_path``
        names; empty for a local folder."""

    def local_path(self, key: str) -> Path | None:
        """The object's file when the store is a local folder, else None."""

    def reference(self, key: str) -> str:
        """What a database row records for the object (a file path; ``s3://bucket/key``)."""

    def key_of(self, reference: str) -> str | None:
        """The key a recorded reference names, or None when it is not in this store."""


def check_key(key: str) -> str:
    """A key is a relative path of plain names: no ``..``, no leading slash, no empty part."""
    if not key or UNSAFE.search(key) or any(part in ("", ".", "..") for part in key.split("/")):
        raise InvalidInput(f"invalid stored file name {key!r}")
    return key


def check_prefix(prefix: str) -> str:
    """A prefix is a key, or a key's folder ending in a slash."""
    check_key(prefix.rstrip("/"))
    return prefix
