"""cartotheca.catalogue.documents: document files and links, ALLOWED_DOCUMENT_TYPES, downloads.

A document is either an uploaded file, kept in the file store under ``documents/<uuid>/<name>``
(``DATA_DIR/documents/...`` by default; the row records the file's path, or the object's
``s3://`` URL), or a link
to a remote one (``doc_url``) that is never fetched except through ``cartotheca.net`` (for a
thumbnail, when PROXY_ALLOWED_HOSTS allows its host). Every check (type, size, content, URL)
happens before anything is stored; a stored file lives exactly as long as the transaction that
recorded it: a rollback removes it, and deleting the resource removes it after the commit.
"""

from __future__ import annotations

import hashlib
import logging
import re
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from sqlalchemy import select
from sqlalchemy.orm import Session

from cartotheca import net
from cartotheca.catalogue import document_content as content
from cartotheca.catalogue import events, resource_lifecycle, resource_writer, thumbnails, upload_limits
from cartotheca.catalogue import permissions as perms
from cartotheca.catalogue import resources as catalogue
from cartotheca.catalogue.auth import Principal
from cartotheca.db.models import Document, Resource
from cartotheca.db.session import on_commit, on_rollback
from cartotheca.errors import InvalidInput, NotAuthenticated, NotFound, StoreUnavailable
from cartotheca.filestore import FileStore, ObjectInfo
from cartotheca.filestore.stores import file_store
from cartotheca.settings import Settings

log = logging.getLogger("cartotheca.documents")
CODE = "document_exception"  # GeoNode's error code for document creation
WORLD = (-180.0, -90.0, 180.0, 90.0)  # GeoNode gives documents the whole world as their extent
EXTRA_FIELDS = ("name", "href", "extension", "mime_type", "doc_url", "download_url", "download_urls")
EXTENSION = re.compile(r"^[a-z0-9]{1,16}$")
DOCUMENTS = "documents/"  # the file store prefix of documents' files, one folder per document


@dataclass(frozen=True)
class StoredFile:
    """A document's file in the file store, as a download reads it."""

    files: FileStore
    key: str
    info: ObjectInfo


@dataclass(frozen=True)
class NewDocument:
    """What a creation request carries: a staged file or a URL, and a few metadata fields."""

    title: str | None = None
    abstract: str | None = None
    file: Path | None = None  # the staged upload
    file_name: str | None = None  # the client's (sanitised) file name
    doc_url: str | None = None
    extension: str | None = None
    metadata_only: bool | None = None


def max_bytes(settings: Settings, session: Session | None = None) -> int:
    """The largest document file: the ``document_upload_size`` limit staff may set through the
    API (MAX_DOCUMENT_SIZE, in megabytes as in GeoNode, until they do); without a session the
    setting alone (remote thumbnails)."""
    if session is None:
        return int(settings.MAX_DOCUMENT_SIZE * 1024 * 1024)
    return upload_limits.get_size_limit(session, settings, upload_limits.DOCUMENT_UPLOAD_SIZE).max_size


def too_large(limit: int) -> InvalidInput:
    return InvalidInput(f"The file exceeds the maximum document size ({upload_limits.size_label(limit)})",
                        code=CODE)


def allowed_extension(settings: Settings, extension: str | None) -> str:
    value = (extension or "").strip().lower().lstrip(".")
    allowed = {e.strip().lower().lstrip(".") for e in settings.ALLOWED_DOCUMENT_TYPES}
    if not value or not EXTENSION.match(value) or value not in allowed:
        raise InvalidInput("The file provided is not in the supported extensions list", code=CODE,
                           extra=[f"Allowed: {', '.join(sorted(allowed))}"])
    return value


def _suffix(name: str) -> str | None:
    suffix = Path(name).suffix.lower().lstrip(".")
    return suffix or None


# -- creation -----------------------------------------------------------------------------------


def create_document(session: Session, principal: Principal, settings: Settings,
                    new: NewDocument) -> Resource:
    """Check everything, then record the document (and store its file) in the session."""
    if principal.id is None:
        raise NotAuthenticated()
    if new.file is not None and new.doc_url:
        raise InvalidInput("Either a file or a URL must be specified, not both", code=CODE)
    if new.file is None and not new.doc_url:
        raise InvalidInput("A file, file path or URL must be specified", code=CODE)
    if new.file is not None:
        extension = allowed_extension(settings, _suffix(new.file_name or "") or new.extension)
        _check_file(session, settings, new.file, extension)
        title = new.title or Path(new.file_name or "").stem or "document"
    else:
        assert new.doc_url is not None
        url_extension = _suffix(unquote(urlsplit(new.doc_url).path)) if _parses(new.doc_url) else None
        extension = allowed_extension(settings, new.extension or url_extension)
        net.check_link(new.doc_url, settings)
        title = new.title or _url_title(new.doc_url)
    values: dict[str, Any] = {"title": title.strip()[:255] or "document"}
    if new.abstract is not None:
        values["abstract"] = new.abstract
    if new.metadata_only is not None:
        values["metadata_only"] = new.metadata_only
    resource = resource_lifecycle.create_resource(session, principal, settings, values,
                                                  resource_type="document")
    resource.subtype = content.subtype_of(extension)
    resource.name = resource.title
    resource.sourcetype = "REMOTE" if new.doc_url else "LOCAL"
    resource_writer.set_extent(resource, WORLD, "EPSG:4326", WORLD)
    document = Document(resource_id=resource.id, extension=extension,
                        mime_type=content.mime_type_of(extension), doc_url=new.doc_url)
    pixels = _thumbnail_pixels(settings, document, new.file)
    if new.file is not None:
        _store(session, settings, resource, document, new.file, new.file_name or f"document.{extension}")
    session.add(document)
    session.flush()
    _keep_thumbnail(session, settings, resource, pixels)
    events.record(session, events.DOCUMENT_UPLOADED, resource=resource, actor=principal)
    return resource


def _parses(url: str) -> bool:
    try:
        urlsplit(url)
    except ValueError:
        return False
    return True


def _url_title(url: str) -> str:
    try:
        name = unquote(urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1])
    except ValueError:
        name = ""
    return Path(name).stem or "document"


def _check_file(session: Session, settings: Settings, path: Path, extension: str) -> None:
    size = path.stat().st_size
    limit = max_bytes(settings, session)
    if size > limit:
        raise too_large(limit)
    if size == 0:
        raise InvalidInput("The file is empty", code=CODE)
    content.check_content(path, extension)


def _store(session: Session, settings: Settings, resource: Resource, document: Document,
           staged: Path, file_name: str) -> None:
    """Move the checked upload into the file store; undone if the transaction rolls back."""
    files = file_store(settings)
    key = f"{DOCUMENTS}{resource.uuid}/{file_name}"
    # before the move: a half move goes too
    _on_rollback(session, lambda: _remove_files(files, files.reference(key)))
    digest = hashlib.sha256()
    with staged.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    size = staged.stat().st_size
    files.put_file(key, staged, move=True)
    document.file_path, document.file_name = files.reference(key), file_name
    document.file_size, document.sha256 = size, digest.hexdigest()


def _remove_files(files: FileStore, reference: str) -> None:
    """Remove a stored document file and its per-document folder (and nothing else)."""
    key = files.key_of(reference)
    if key is None or not key.startswith(DOCUMENTS) or key.count("/") != 2:
        log.warning("not removing %s: not a document's file", reference)
        return
    files.delete_prefix(key.rsplit("/", 1)[0] + "/")


# -- thumbnails ---------------------------------------------------------------------------------


def _thumbnail_pixels(settings: Settings, document: Document, staged: Path | None):
    """Draw a thumbnail from the checked upload (before it is stored), or from the remote file
    when its host is allowed; never a reason for the creation to fail."""
    size = (int(settings.THUMBNAIL_SIZE[0]), int(settings.THUMBNAIL_SIZE[1]))
    if staged is not None:
        return content.thumbnail_pixels(staged, document.extension, size)
    if document.doc_url and _drawable(document.extension):
        return remote_thumbnail_pixels(settings, document.doc_url, document.extension, size)
    return None


def _keep_thumbnail(session: Session, settings: Settings, resource: Resource, pixels) -> None:
    if pixels is None:
        return
    files = file_store(settings)
    key = thumbnails.thumbnail_key(resource.uuid)
    existed = files.stat(key) is not None
    thumbnails.write_thumbnail(settings, resource, thumbnails.encode_png(pixels))
    if not existed:
        _on_rollback(session, lambda: files.delete(key))


def _drawable(extension: str) -> bool:
    return extension in content.IMAGE_EXTENSIONS or extension == "pdf"


def remote_thumbnail_pixels(settings: Settings, url: str, extension: str, size: tuple[int, int],
                            policy: net.AddressPolicy = net.is_public_address):
    """Pixels of a remote image or PDF, fetched through ``cartotheca.net`` (allowed hosts only,
    within TIMEOUT and MAX_DOCUMENT_SIZE) and checked like an upload; None when not possible."""
    if not net.host_allowed(_host(url), settings.PROXY_ALLOWED_HOSTS):
        return None
    try:
        fetched = net.fetch(url, settings, max_bytes=max_bytes(settings), policy=policy)
    except InvalidInput as exc:
        log.info("no thumbnail for %s: %s", url, exc.message)
        return None
    except Exception:  # noqa: BLE001 - a thumbnail is welcome, never a reason to fail
        log.warning("no thumbnail for %s", url, exc_info=True)
        return None
    with tempfile.TemporaryDirectory(prefix="cartotheca-doc-") as folder:
        path = Path(folder) / f"remote.{extension}"
        path.write_bytes(fetched.body)
        try:
            content.check_content(path, extension)
        except InvalidInput:
            return None
        return content.thumbnail_pixels(path, extension, size)


def _host(url: str) -> str:
    try:
        return net.parse_url(url).host
    except InvalidInput:
        return ""


# -- reading ------------------------------------------------------------------------------------


def document_rows(session: Session, ids: Sequence[int]) -> dict[int, Document]:
    """The document rows of a page of resources, in one statement."""
    if not ids:
        return {}
    rows = session.scalars(select(Document).where(Document.resource_id.in_(list(ids))))
    return {row.resource_id: row for row in rows}


def for_download(session: Session, principal: Principal, settings: Settings,
                 raw_id: Any) -> tuple[Resource, Document, StoredFile | None]:
    """The document behind ``/documents/{pk}/download``: visible and downloadable by the
    requester (401/403 as for the detail, then the download permission), with its stored file
    (None for a link)."""
    listing = catalogue.get_resource(session, principal, settings, raw_id,
                                     resource_type=("document",), load=False)
    resource = listing.rows[0]
    catalogue.require(session, principal, resource, perms.DOWNLOAD)
    document = session.get(Document, resource.id)
    if document is None:
        raise NotFound()
    if document.doc_url:
        return resource, document, None
    files = file_store(settings)
    key = files.key_of(document.file_path) if document.file_path else None
    info = files.stat(key) if key else None
    if key is None or info is None:
        log.error("the file of document %s is missing: %s", resource.id, document.file_path)
        raise NotFound()
    return resource, document, StoredFile(files, key, info)


# -- writes -------------------------------------------------------------------------------------


def patch_document(session: Session, principal: Principal, settings: Settings, resource: Resource,
                   body: Any, current: Mapping[str, Any] | None = None) -> None:
    """The resource fields of a patch; the document's own fields are read-only (an unchanged
    echo of them, as clients PUT back what they GET, is accepted)."""
    if not isinstance(body, Mapping):
        raise InvalidInput("Invalid data. Expected a dictionary.")
    rest = {}
    for key, value in body.items():
        if key in EXTRA_FIELDS:
            if current is not None and current.get(key) == value:
                continue
            raise InvalidInput(f"{key}: this field is read-only and cannot be changed")
        rest[key] = value
    resource_lifecycle.patch_resource(session, principal, settings, resource, rest,
                                      dict(current) if current is not None else None)


def forget_files(session: Session, settings: Settings, resource_ids: Sequence[int]) -> None:
    """Resources are about to be deleted: their document files go once the deletion commits."""
    if not resource_ids:
        return
    references = list(session.scalars(
        select(Document.file_path).where(Document.resource_id.in_(list(resource_ids)),
                                         Document.file_path.is_not(None))))
    files = file_store(settings)
    for reference in references:
        _on_commit(session, lambda r=reference: _remove_files(files, r))


def copy_document(session: Session, settings: Settings, source: Resource, clone: Resource) -> None:
    """A copied document gets its own copy of the file (and keeps the source's link)."""
    original = session.get(Document, source.id)
    if original is None:
        return
    document = Document(resource_id=clone.id, extension=original.extension,
                        mime_type=original.mime_type, doc_url=original.doc_url)
    files = file_store(settings)
    source_key = files.key_of(original.file_path) if original.file_path else None
    if source_key is not None and files.stat(source_key) is not None:
        name = original.file_name or source_key.rsplit("/", 1)[1]
        key = f"{DOCUMENTS}{clone.uuid}/{name}"
        _on_rollback(session, lambda: _remove_files(files, files.reference(key)))
        with tempfile.TemporaryDirectory(prefix="cartotheca-doc-") as folder:
            copied = Path(folder) / "copy"
            files.download(source_key, copied)
            files.put_file(key, copied, move=True)
        document.file_path, document.file_name = files.reference(key), name
        document.file_size, document.sha256 = original.file_size, original.sha256
    session.add(document)
    session.flush()


# -- transaction-bound file actions --------------------------------------------------------------
# Only file-system errors and file store outages are logged and swallowed here (an outage
# leaves the object behind); anything else is a bug and propagates.
FILE_ERRORS = (OSError, StoreUnavailable)


def _on_rollback(session: Session, action: Callable[[], None]) -> None:
    on_rollback(session, action, errors=FILE_ERRORS, failure="file action after rollback failed")


def _on_commit(session: Session, action: Callable[[], None]) -> None:
    on_commit(session, action, errors=FILE_ERRORS, failure="file action after commit failed")
