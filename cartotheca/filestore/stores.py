"""cartotheca.filestore.stores: the file store the settings name, and the settings it needs.

Kept apart from the interface (``cartotheca.filestore``), which every backend imports: only
this module knows the backends.
"""

from __future__ import annotations

import botocore.exceptions

from cartotheca.filestore import FileStore
from cartotheca.filestore.local import LocalFileStore
from cartotheca.filestore.s3 import S3FileStore
from cartotheca.settings import Settings


class ConfigurationError(ValueError):
    """Settings the file store cannot start with; the commands exit with the message."""


def file_store(settings: Settings) -> FileStore:
    """The store of ``settings``: built once per settings object (its client and connection
    pool are reused), by the composition root that starts first."""
    signature = (settings.OBJECT_STORE_URL, settings.S3_ENDPOINT_URL, settings.AWS_REGION,
                 settings.AWS_ACCESS_KEY_ID, settings.AWS_SECRET_ACCESS_KEY, str(settings.DATA_DIR))
    if settings._file_store is None or settings._file_store[0] != signature:
        # (a copy of the settings with other store settings gets a store of its own)
        settings._file_store = (signature, _build(settings))
    return settings._file_store[1]


def _build(settings: Settings) -> FileStore:
    if not settings.OBJECT_STORE_URL:
        # resolved: rows record absolute paths, whatever the working directory
        return LocalFileStore(settings.DATA_DIR.resolve())
    try:
        return S3FileStore.connect(
            settings.OBJECT_STORE_URL, endpoint_url=settings.S3_ENDPOINT_URL, region=settings.AWS_REGION,
            access_key=settings.AWS_ACCESS_KEY_ID, secret_key=settings.AWS_SECRET_ACCESS_KEY)
    except (ValueError, botocore.exceptions.BotoCoreError) as exc:
        raise ConfigurationError(f"the object store cannot be used: {exc}") from None


def open_file_store(settings: Settings) -> FileStore:
    """For the composition roots: refuse settings the file store cannot run with, then build
    the store the rest of the process uses."""
    problems = configuration_problems(settings)
    if problems:
        raise ConfigurationError("; ".join(problems))
    return file_store(settings)


def configuration_problems(settings: Settings) -> list[str]:
    """Why these settings cannot run with their file store: several nodes share an object
    store, so nothing a node keeps on its own disk may differ between them."""
    if not settings.OBJECT_STORE_URL:
        return []
    problems = []
    if settings.STORAGE_BACKEND != "postgis":
        problems.append(
            "OBJECT_STORE_URL is set but STORAGE_BACKEND is "
            f"{settings.STORAGE_BACKEND!r}: GeoPackage vector stores live on one node's disk; "
            "set CARTOTHECA_STORAGE_BACKEND=postgis and CARTOTHECA_DATASTORE_URL")
    if not settings.SECRET_KEY:
        problems.append(
            "OBJECT_STORE_URL is set but SECRET_KEY is not: a key generated into DATA_DIR would "
            "differ per node; set CARTOTHECA_SECRET_KEY to the same value on every node")
    return problems
