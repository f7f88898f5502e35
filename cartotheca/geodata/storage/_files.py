"""cartotheca.geodata.storage._files: publishing a finished file under its final name."""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

from cartotheca.errors import Conflict


def publish(temporary: Path, final: Path) -> None:
    """Give ``temporary`` the name ``final`` unless something already has it. A hard link does
    that atomically; file systems without hard links get a check then a rename."""
    try:
        os.link(temporary, final)
        return
    except FileExistsError:
        raise Conflict(f"{final.name} already exists") from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
    if final.exists():
        raise Conflict(f"{final.name} already exists")
    os.replace(temporary, final)


def remove(path: Path, *suffixes: str) -> None:
    """Delete ``path`` and its siblings named ``path + suffix``; missing ones are fine."""
    for suffix in ("", *suffixes):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{path}{suffix}")
