"""cartotheca.geodata.archives: unpack uploaded zip archives without trusting them.

An archive is checked twice. First its central directory, before a byte is written: member
count, names (no absolute paths, no ``..``, no symbolic links, no encryption), declared total
size and compression ratio. Then while extracting, by counting the bytes the decompressor really
produces, because the sizes in a zip header are whatever its author wrote there.
"""

from __future__ import annotations

import os
import shutil
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from cartotheca.errors import InvalidInput
from cartotheca.settings import Settings

CHUNK = 1 << 20
# Below this expanded size a high ratio is harmless (a small all-blank .dbf compresses 100:1);
# above it the ratio limit applies.
RATIO_FLOOR = 1 << 20
IGNORED_PREFIXES = ("__MACOSX/",)


@dataclass(frozen=True)
class ArchiveLimits:
    max_members: int
    max_total: int  # bytes all members may expand to
    max_ratio: int  # expanded / compressed

    @classmethod
    def from_settings(cls, settings: Settings) -> ArchiveLimits:
        return cls(settings.MAX_ARCHIVE_MEMBERS, settings.MAX_UNZIPPED_SIZE, settings.MAX_UNZIP_RATIO)


class ArchiveRejected(InvalidInput):
    """The archive is unsafe or unreadable; the message says why."""


def is_zip(path: Path) -> bool:
    return zipfile.is_zipfile(path)


def safe_member_path(name: str) -> PurePosixPath:
    """The relative path a member may be extracted to, or ``ArchiveRejected``."""
    normalised = name.replace("\\", "/")
    if normalised.startswith("/") or (len(normalised) > 1 and normalised[1] == ":"):
        raise ArchiveRejected(f"archive member {name!r} has an absolute path")
    parts = [p for p in PurePosixPath(normalised).parts if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise ArchiveRejected(f"archive member {name!r} points outside the archive (..)")
    if not parts:
        raise ArchiveRejected(f"archive member {name!r} has an empty name")
    if any("\x00" in p for p in parts):
        raise ArchiveRejected(f"archive member {name!r} has a null character in its name")
    return PurePosixPath(*parts)


def _is_symlink(info: zipfile.ZipInfo) -> bool:
    mode = info.external_attr >> 16
    return info.create_system == 3 and stat.S_ISLNK(mode)


def check(path: Path, limits: ArchiveLimits) -> list[zipfile.ZipInfo]:
    """The members to extract (files only), after checking the central directory."""
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise ArchiveRejected(f"{path.name} is not a readable zip archive: {exc}") from None
    with handle:
        return check_file(handle, path.name, os.fstat(handle.fileno()).st_size, limits)


def check_file(handle: BinaryIO, name: str, size: int, limits: ArchiveLimits) -> list[zipfile.ZipInfo]:
    """``check`` for an archive of ``size`` bytes open as the seekable ``handle``: only its
    central directory is read (a few byte ranges of an object in a remote store)."""
    try:
        with zipfile.ZipFile(handle) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise ArchiveRejected(f"{name} is not a readable zip archive: {exc}") from None
    if len(infos) > limits.max_members:
        raise ArchiveRejected(
            f"{name} has {len(infos)} members; at most {limits.max_members} are accepted")
    members = []
    for info in infos:
        safe_member_path(info.filename)
        if _is_symlink(info):
            raise ArchiveRejected(f"archive member {info.filename!r} is a symbolic link")
        if info.flag_bits & 0x1:
            raise ArchiveRejected(f"archive member {info.filename!r} is encrypted")
        if info.is_dir() or info.filename.startswith(IGNORED_PREFIXES):
            continue
        members.append(info)
    declared = sum(i.file_size for i in members)
    _check_sizes(name, declared, size, limits, "declares")
    for info in members:
        if info.file_size > RATIO_FLOOR and info.file_size > limits.max_ratio * max(info.compress_size, 1):
            raise ArchiveRejected(
                f"archive member {info.filename!r} expands more than {limits.max_ratio} times "
                "its compressed size (a zip bomb?)")
    return members


def _check_sizes(name: str, expanded: int, compressed: int, limits: ArchiveLimits, verb: str) -> None:
    if expanded > limits.max_total:
        raise ArchiveRejected(
            f"{name} {verb} {expanded} bytes once unpacked; at most {limits.max_total} are accepted")
    if expanded > RATIO_FLOOR and expanded > limits.max_ratio * max(compressed, 1):
        raise ArchiveRejected(
            f"{name} {verb} {expanded} bytes from {compressed} compressed, more than "
            f"{limits.max_ratio} times (a zip bomb?)")


def extract(path: Path, dest: Path, limits: ArchiveLimits) -> list[Path]:
    """Extract the archive's files under ``dest``; returns their paths.

    Sizes are counted as the data comes out of the decompressor, so an archive whose headers
    understate its members is stopped at the limit, not after filling the disk. On any
    rejection whatever was extracted is removed. A ``dest`` left by an interrupted attempt
    (a killed worker whose import is retried) is removed first: members are created
    exclusively, so a leftover file would otherwise stop the retry.
    """
    members = check(path, limits)
    compressed = path.stat().st_size
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    root = dest.resolve()
    written = 0
    out: list[Path] = []
    try:
        with zipfile.ZipFile(path) as archive:
            for info in members:
                target = dest.joinpath(*safe_member_path(info.filename).parts)
                if root not in target.resolve().parents:
                    raise ArchiveRejected(f"archive member {info.filename!r} points outside the archive")
                target.parent.mkdir(parents=True, exist_ok=True)
                written = _copy_member(archive, info, target, written, path, compressed, limits)
                out.append(target)
    except ArchiveRejected:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    except (zipfile.BadZipFile, OSError, EOFError, RuntimeError, NotImplementedError) as exc:
        shutil.rmtree(dest, ignore_errors=True)
        raise ArchiveRejected(f"{path.name} could not be unpacked: {exc}") from None
    return out


def _copy_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path, written: int,
                 path: Path, compressed: int, limits: ArchiveLimits) -> int:
    member_bytes = 0
    with archive.open(info) as src, target.open("xb") as dst:
        while chunk := src.read(CHUNK):
            member_bytes += len(chunk)
            written += len(chunk)
            if member_bytes > info.file_size:
                raise ArchiveRejected(
                    f"archive member {info.filename!r} holds more data than its header declares")
            _check_sizes(path.name, written, compressed, limits, "expands to at least")
            dst.write(chunk)
    return written
