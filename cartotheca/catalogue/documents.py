"""cartotheca.catalogue.documents: document files and links, ALLOWED_DOCUMENT_TYPES, downloads.

A document is either an uploaded file, kept at ``DATA_DIR/documents/<uuid>/<name>``, or a link
to a remote one (``doc_url``) that is never fetched except through ``cartotheca.net`` (for a
thumbnail, when PROXY_ALLOWED_HOSTS allows its host). Every check (type, size, content, URL)
happens before anything is stored; a stored file lives exactly as long as the transaction that
recorded it: a rollback removes it, and deleting the resource removes it after the commit.
"""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
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
from cartotheca.errors import InvalidInput, NotAuthenticated, NotFound
from cartotheca.settings import Settings

log = logging.getLogger("cartotheca.documents")
CODE = "document_exception"  # GeoNode's error code for document creation
WORLD = (-180.0, -90.0, 180.0, 90.0)  # GeoNode gives documents the whole world as their extent
EXTRA_FIELDS = ("name", "href", "extension", "mime_type", "doc_url", "download_url", "download_urls")
EXTENSION = re.compile(r"^[a-z0-9]{1,16}$")


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


def documents_root(settings: Settings) -> Path:
    return settings.DATA_DIR / "documents"


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
    if new.file is not None:
        _store(session, settings, resource, document, new.file, new.file_name or f"document.{extension}")
    session.add(document)
    session.flush()
    _thumbnail(session, settings, resource, document)
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
    """Move the checked upload into place; undone if the transaction rolls back."""
    folder = (documents_root(settings) / resource.uuid).resolve()
    folder.mkdir(parents=True, exist_ok=False)
    target = folder / file_name
    _on_rollback(session, lambda: _remove_folder(target))  # before the move: a half move goes too
    digest = hashlib.sha256()
    with staged.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    shutil.move(str(staged), target)
    document.file_path, document.file_name = str(target), file_name
    document.file_size, document.sha256 = target.stat().st_size, digest.hexdigest()


def _remove_folder(file_path: Path) -> None:
    """Remove a stored document file and its per-document folder (and nothing else)."""
    folder = file_path.parent
    if folder.parent.name != "documents":
        log.warning("not removing %s: not a document folder", file_path)
        return
    shutil.rmtree(folder, ignore_errors=True)


# -- thumbnails ---------------------------------------------------------------------------------


def _thumbnail(session: Session, settings: Settings, resource: Resource, document: Document) -> None:
    """Draw a thumbnail from the stored file, or from the remote one when its host is allowed;
    never a reason for the creation to fail."""
    size = (int(settings.THUMBNAIL_SIZE[0]), int(settings.THUMBNAIL_SIZE[1]))
    pixels = None
    if document.file_path:
        pixels = content.thumbnail_pixels(Path(document.file_path), document.extension, size)
    elif document.doc_url and _drawable(document.extension):
        pixels = remote_thumbnail_pixels(settings, document.doc_url, document.extension, size)
    if pixels is None:
        return
    path = thumbnails.thumbnail_path(settings, resource.uuid)
    existed = path.exists()
    thumbnails.write_thumbnail(settings, resource, thumbnails.encode_png(pixels))
    if not existed:
        _on_rollback(session, lambda: path.unlink(missing_ok=True))


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
                 raw_id: Any) -> tuple[Resource, Document]:
    """The document behind ``/documents/{pk}/download``: visible and downloadable by the
    requester (401/403 as for the detail, then the download permission)."""
    listing = catalogue.get_resource(session, principal, settings, raw_id,
                                     resource_type=("document",), load=False)
    resource = listing.rows[0]
    catalogue.require(session, principal, resource, perms.DOWNLOAD)
    document = session.get(Document, resource.id)
    if document is None:
        raise NotFound()
    if document.doc_url:
        return resource, document
    if not document.file_path or not Path(document.file_path).is_file():
        log.error("the file of document %s is missing: %s", resource.id, document.file_path)
        raise NotFound()
    return resource, document


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


def forget_files(session: Session, resource_ids: Sequence[int]) -> None:
    """Resources are about to be deleted: their document files go once the deletion commits."""
    if not resource_ids:
        return
    paths = [Path(p) for p in session.scalars(
        select(Document.file_path).where(Document.resource_id.in_(list(resource_ids)),
                                         Document.file_path.is_not(None)))]
    for path in paths:
        _on_commit(session, lambda p=path: _remove_folder(p))


def copy_document(session: Session, settings: Settings, source: Resource, clone: Resource) -> None:
    """A copied document gets its own copy of the file (and keeps the source's link)."""
    original = session.get(Document, source.id)
    if original is None:
        return
    document = Document(resource_id=clone.id, extension=original.extension,
                        mime_type=original.mime_type, doc_url=original.doc_url)
    if original.file_path and Path(original.file_path).is_file():
        folder = (documents_root(settings) / clone.uuid).resolve()
        folder.mkdir(parents=True, exist_ok=False)
        target = folder / (original.file_name or Path(original.file_path).name)
        _on_rollback(session, lambda: _remove_folder(target))
        shutil.copyfile(original.file_path, target)
        document.file_path, document.file_name = str(target), target.name
        document.file_size, document.sha256 = original.file_size, original.sha256
    session.add(document)
    session.flush()


# -- transaction-bound file actions --------------------------------------------------------------
# Only file-system errors are logged and swallowed here; anything else is a bug and propagates.


def _on_rollback(session: Session, action: Callable[[], None]) -> None:
    on_rollback(session, action, errors=(OSError,), failure="file action after rollback failed")


def _on_commit(session: Session, action: Callable[[], None]) -> None:
    on_commit(session, action, errors=(OSError,), failure="file action after commit failed")
