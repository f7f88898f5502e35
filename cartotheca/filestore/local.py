"""cartotheca.filestore.local: the file store as a folder (the embedded default, ``DATA_DIR``).

Keys are paths under the folder, so the layout on disk is the one the service always had
(``documents/<uuid>/<name>``, ``thumbnails/<uuid>.png``). Writes go to a temporary file beside
the target and are renamed into place. The entity tag is the one Starlette's file responses
send (a hash of time and size), so a client's cached copy stays valid across the change.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from cartotheca.errors import InvalidInput
from cartotheca.filestore import CHUNK_BYTES, ObjectInfo, ObjectWriter, check_key, check_prefix


class LocalFileStore:
    def __init__(self, root: Path):
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        return self.root / check_key(key)

    def put(self, key: str, source: BinaryIO) -> None:
        target = self._path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".put-")
        try:
            with os.fdopen(handle, "wb") as out:
                shutil.copyfileobj(source, out, CHUNK_BYTES)
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def put_file(self, key: str, path: Path, *, move: bool = False) -> None:
        if not move:
            with Path(path).open("rb") as source:
                self.put(key, source)
            return
        target = self._path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.parent / f".put-{uuid.uuid4().hex}"
        try:
            shutil.move(str(path), temporary)  # a rename within one file system
            os.replace(temporary, target)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise

    def put_bytes(self, key: str, data: bytes) -> None:
        target = self._path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".put-")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def open_writer(self, key: str) -> ObjectWriter:
        return _FileWriter(self._path(key))

    def open_file(self, key: str) -> BinaryIO:
        return self._path(key).open("rb")

    def open_range(self, key: str, start: int = 0, stop: int | None = None) -> Iterator[bytes]:
        handle = self._path(key).open("rb")
        handle.seek(start)
        return _chunks(handle, None if stop is None else stop - start)

    def read_bytes(self, key: str) -> bytes | None:
        try:
            return self._path(key).read_bytes()
        except (FileNotFoundError, IsADirectoryError):
            return None

    def stat(self, key: str) -> ObjectInfo | None:
        path = self._path(key)
        try:
            result = path.stat()
        except FileNotFoundError:
            return None
        if not path.is_file():
            return None
        tag = hashlib.md5(f"{result.st_mtime}-{result.st_size}".encode(), usedforsecurity=False)
        return ObjectInfo(size=result.st_size, etag=f'"{tag.hexdigest()}"', mtime=result.st_mtime)

    def download(self, key: str, target: Path) -> None:
        shutil.copyfile(self._path(key), target)

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

    def delete_prefix(self, prefix: str) -> None:
        for key in self.list_prefix(prefix):
            self.delete(key)
        if prefix.endswith("/"):
            # a folder prefix: the folder goes too, as a document's folder always did
            shutil.rmtree(self.root / check_prefix(prefix), ignore_errors=True)

    def list_prefix(self, prefix: str) -> list[str]:
        check_prefix(prefix)
        folder = self.root / prefix if prefix.endswith("/") else (self.root / prefix).parent
        if not folder.is_dir():
            return []
        keys = (p.relative_to(self.root).as_posix() for p in folder.rglob("*") if p.is_file())
        return sorted(key for key in keys if key.startswith(prefix))

    def gdal_path(self, key: str) -> str:
        return str(self._path(key))

    def gdal_config(self) -> dict[str, str]:
        return {}

    def local_path(self, key: str) -> Path | None:
        return self._path(key)

    def reference(self, key: str) -> str:
        return str(self._path(key))

    def key_of(self, reference: str) -> str | None:
        path = Path(reference)
        for root, candidate in ((self.root, path), (self.root.resolve(), path.resolve())):
            try:
                return check_key(candidate.relative_to(root).as_posix())
            except (ValueError, InvalidInput):
                continue
        return None


class _FileWriter:
    """Writes to a temporary file beside the target, renamed into place at ``commit``."""

    def __init__(self, target: Path):
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".put-")
        self._out = os.fdopen(handle, "wb")
        self._temporary, self._target = Path(temporary), target

    def write(self, data: bytes) -> None:
        self._out.write(data)

    def commit(self) -> None:
        try:
            self._out.close()
            os.replace(self._temporary, self._target)
        except BaseException:
            self.abort()
            raise

    def abort(self) -> None:
        self._out.close()
        self._temporary.unlink(missing_ok=True)


def _chunks(handle: BinaryIO, remaining: int | None) -> Iterator[bytes]:
    with handle:
        while remaining is None or remaining > 0:
            chunk = handle.read(CHUNK_BYTES if remaining is None else min(CHUNK_BYTES, remaining))
            if not chunk:
                return
            if remaining is not None:
                remaining -= len(chunk)
            yield chunk
