"""cartotheca.catalogue.staging: where the files of a dataset upload wait for their import.

Without an object store an upload waits in its folder of ``UPLOAD_DIR``
(``<token>/<field>/<file name>``) and the import reads it there, so the node that received it
and the process that imports it must share that folder. With ``OBJECT_STORE_URL`` it waits in
the bucket under ``uploads/<token>/``: the receiving node streams each part there as it
arrives, and the import, in any process on any machine, copies the files into a work folder of
its own ``UPLOAD_DIR``, imports from there, and removes the copy and the objects when the import
ends. The journal of what an import is writing waits beside the files in either case, so a
retry or the clean-up of an abandoned import reads it wherever it runs.
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import shutil
import time
import uuid
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, BinaryIO, Protocol

from cartotheca import xmlsafe
from cartotheca.catalogue.publishing import JOURNAL_NAME, Journal
from cartotheca.filestore import FileStore, ObjectWriter
from cartotheca.filestore.stores import file_store
from cartotheca.geodata import archives
from cartotheca.settings import Settings

STORE_PREFIX = "uploads/"
JOURNAL_FOLDER = "journal/"
COPY_PREFIX = "import-"
LOCK_SUFFIX = ".lock"
# A work copy's lock file younger than this may have just been made and not yet locked by the
# import that made it: the sweep leaves it alone.
SWEEP_MIN_AGE = 60.0


class Staging(Protocol):
    """The staged files of one upload, named by paths relative to it (``<field>/<name>``)."""

    remote: bool  # writing and reading wait on the network (off the event loop, then)

    def create(self) -> None: ...

    def open(self, relative: str) -> ObjectWriter: ...

    def open_file(self, relative: str) -> BinaryIO: ...

    def local_path(self, relative: str) -> Path | None:
        """The file itself when staged in a folder, else None."""

    def fetch(self, relatives: Iterable[str]) -> Path:
        """A local folder holding the files ``relatives`` at those paths, for the import; a
        new one on every call (a retried import starts clean)."""

    def journal(self) -> Journal: ...

    def remove(self) -> None:
        """The staged files, the journal and this process's local copy go."""


@dataclass(frozen=True)
class StagedPart:
    """One received file of an upload, read where it is staged."""

    staging: Staging
    relative: str  # "<field>/<file name>"

    @property
    def name(self) -> str:
        return self.relative.rsplit("/", 1)[-1]

    def read_xml(self, what: str) -> str:
        with self.staging.open_file(self.relative) as handle:
            return xmlsafe.read_file(handle, _size(handle), what)

    def check_archive(self, limits: archives.ArchiveLimits) -> list[zipfile.ZipInfo]:
        with self.staging.open_file(self.relative) as handle:
            return archives.check_file(handle, self.name, _size(handle), limits)


def _size(handle: BinaryIO) -> int:
    """The size of an open, seekable file, which is left at its start: the opened object knows
    it already (a stored object's size came with its opening, no request more)."""
    size = handle.seek(0, io.SEEK_END)
    handle.seek(0)
    return size


def for_upload(settings: Settings, token: str) -> Staging:
    """The staging of the upload ``token``: in the object store when one is configured."""
    if settings.OBJECT_STORE_URL:
        return StoreStaging(file_store(settings), f"{STORE_PREFIX}{token}/", settings.upload_dir, token)
    return FolderStaging(settings.upload_dir / token)


class FolderStaging:
    """Files in a folder; also the staging of a form read within one request (a document)."""

    remote = False

    def __init__(self, folder: Path):
        self.folder = folder

    def create(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=False)

    def open(self, relative: str) -> ObjectWriter:
        target = self.folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        return _PartFile(target.open("xb"))

    def open_file(self, relative: str) -> BinaryIO:
        return (self.folder / relative).open("rb")

    def local_path(self, relative: str) -> Path | None:
        return self.folder / relative

    def fetch(self, relatives: Iterable[str]) -> Path:
        return self.folder  # the import reads the staged files where they are

    def journal(self) -> Journal:
        return Journal(self.folder / JOURNAL_NAME)

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


class _PartFile:
    """A received part written straight into its file (the folder is the staging)."""

    def __init__(self, handle: IO[bytes]):
        self.handle = handle

    def write(self, data: bytes) -> None:
        self.handle.write(data)

    def commit(self) -> None:
        self.handle.close()

    def abort(self) -> None:
        self.handle.close()  # the folder is removed with the whole form


class StoreStaging:
    """Objects under ``prefix`` in the file store; the import works on a copy in ``local_root``
    (its own process's ``UPLOAD_DIR``)."""

    remote = True

    def __init__(self, files: FileStore, prefix: str, local_root: Path, token: str):
        self.files, self.prefix, self.local_root, self.token = files, prefix, local_root, token
        self._copy: _WorkCopy | None = None

    def create(self) -> None:
        pass  # a new token's prefix holds nothing

    def open(self, relative: str) -> ObjectWriter:
        return self.files.open_writer(self.prefix + relative)

    def open_file(self, relative: str) -> BinaryIO:
        return self.files.open_file(self.prefix + relative)

    def local_path(self, relative: str) -> Path | None:
        return None

    def fetch(self, relatives: Iterable[str]) -> Path:
        sweep_work_copies(self.local_root)
        self._drop_copy()
        self._copy = _WorkCopy(self.local_root, self.token)
        for relative in relatives:
            target = self._copy.folder / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            self.files.download(self.prefix + relative, target)
        return self._copy.folder

    def journal(self) -> Journal:
        return StoredJournal(self.files, self.prefix + JOURNAL_FOLDER)

    def remove(self) -> None:
        self._drop_copy()
        self.files.delete_prefix(self.prefix)

    def _drop_copy(self) -> None:
        if self._copy is not None:
            self._copy.remove()
            self._copy = None


class StoredJournal(Journal):
    """The journal as objects of the file store, one per entry (an object cannot be appended
    to). An entry is noted once the store has it, as the file journal's fsync makes sure; keys
    sort in the order the entries were noted."""

    def __init__(self, files: FileStore, prefix: str):
        super().__init__(None)
        self.files, self.prefix = files, prefix

    def note(self, **entry: Any) -> None:
        key = f"{self.prefix}{time.time_ns():020d}-{uuid.uuid4().hex[:8]}.json"
        self.files.put_bytes(key, json.dumps(entry).encode())

    def entries(self) -> list[dict[str, Any]]:
        out = []
        for key in self.files.list_prefix(self.prefix):
            data = self.files.read_bytes(key)
            try:
                out.append(json.loads(data or b""))
            except ValueError:
                continue
        return out

    def forget(self) -> None:
        self.files.delete_prefix(self.prefix)


class _WorkCopy:
    """A work folder of one import attempt, ``import-<token>-<random>`` in ``UPLOAD_DIR``,
    with a lock on ``<folder>.lock`` held while the attempt runs. The lock ends with its
    process, so a folder whose lock nobody holds is the leftover of an attempt killed on this
    machine, whichever machine its retry ran on."""

    def __init__(self, root: Path, token: str):
        root.mkdir(parents=True, exist_ok=True)
        name = f"{COPY_PREFIX}{token[:12]}-{uuid.uuid4().hex[:12]}"
        self.folder, self.lock = root / name, root / f"{name}{LOCK_SUFFIX}"
        self._descriptor = os.open(self.lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        fcntl.flock(self._descriptor, fcntl.LOCK_EX)
        self.folder.mkdir()

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        self.lock.unlink(missing_ok=True)
        os.close(self._descriptor)


def sweep_work_copies(root: Path) -> int:
    """Remove the work copies in ``root`` whose attempt was killed; returns how many."""
    removed = 0
    for lock in root.glob(f"{COPY_PREFIX}*{LOCK_SUFFIX}"):
        try:
            if time.time() - lock.stat().st_mtime < SWEEP_MIN_AGE:
                continue
            descriptor = os.open(lock, os.O_RDONLY)
        except FileNotFoundError:
            continue  # removed by its import meanwhile
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(descriptor)
            continue  # an attempt still running, in this process or another
        try:
            shutil.rmtree(root / lock.name.removesuffix(LOCK_SUFFIX), ignore_errors=True)
            lock.unlink(missing_ok=True)
            removed += 1
        finally:
            os.close(descriptor)
    return removed
