"""cartotheca.catalogue.harvesting.local: a remote resource as a local resource, created or updated.

A harvested resource is an ordinary resource record (same table, same lists, same permissions)
whose ``sourcetype`` is ``REMOTE``: a dataset keeps its data on the remote (subtype ``remote``,
the remote's OWS endpoint and layer in ``blob["remote"]``), a document links to the remote's
file, and a CSW record is metadata only.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import select
from sqlalchemy.orm import Session

from cartotheca.catalogue import document_content, resource_lifecycle, resource_writer
from cartotheca.catalogue import resources as catalogue
from cartotheca.catalogue.accounts import internal_group_ids
from cartotheca.catalogue.auth import InternalGroups, Principal, principal_for
from cartotheca.catalogue.harvesting.remote import RemoteResource
from cartotheca.catalogue.query.resource_list import LOAD_OPTIONS
from cartotheca.db.models import Document, Harvester, Resource, User
from cartotheca.errors import InvalidInput
from cartotheca.settings import Settings

DEFAULT_EXTENSION = "html"  # a linked document whose file type the remote did not say
WORLD = (-180.0, -90.0, 180.0, 90.0)


def owner_principal(session: Session, settings: Settings, harvester: Harvester) -> Principal:
    user = session.get(User, harvester.default_owner_id)
    if user is None:
        raise InvalidInput("the harvester's default owner no longer exists")
    anonymous_id, registered_id = internal_group_ids(session, settings)
    return principal_for(session, user, InternalGroups(anonymous_id, registered_id), "job")


def _values(remote: RemoteResource) -> dict[str, Any]:
    values: dict[str, Any] = {
        "title": remote.title or remote.unique_identifier,
        "abstract": remote.abstract or "",
        "keywords": [k.strip()[:255] for k in remote.keywords if k.strip()],
        "metadata_only": remote.metadata_only,
    }
    if remote.date is not None:
        values["date"] = remote.date.isoformat()
    if remote.date_type in catalogue.DATE_TYPES:
        values["date_type"] = remote.date_type
    return values


def web_url(value: Any) -> str | None:
    """An http(s) URL from a remote, or None: links, thumbnails and document URLs reach
    clients, which must never be handed ``javascript:`` or ``file:`` URLs."""
    if not isinstance(value, str) or len(value) > 2048:
        return None
    return value if urlsplit(value.strip()).scheme.lower() in ("http", "https") else None


def _remote_blob(harvester: Harvester, remote: RemoteResource) -> dict[str, Any]:
    return {"remote": {
        "harvester_id": harvester.id,
        "unique_identifier": remote.unique_identifier,
        "ows_url": web_url(remote.ows_url),
        "layer": remote.layer_name,
        "detail_url": web_url(remote.detail_url),
        "links": [link for link in remote.links if web_url(link.get("url"))],
    }}


def _local_type(remote: RemoteResource) -> str:
    if remote.metadata_only:
        return remote.resource_type if remote.resource_type in catalogue.RESOURCE_TYPES else "dataset"
    return "document" if remote.resource_type == "document" else "dataset"


def save(session: Session, settings: Settings, principal: Principal, harvester: Harvester,
         remote: RemoteResource, resource_id: int | None) -> Resource:
    """Create the local copy of ``remote``, or bring the existing one (``resource_id``) up to date."""
    resource = session.scalar(select(Resource).where(Resource.id == resource_id)
                              .options(*LOAD_OPTIONS)) if resource_id else None
    if resource is None:
        resource = resource_lifecycle.create_resource(session, principal, settings, _values(remote),
                                                      resource_type=_local_type(remote))
    else:
        resource_writer.Writer(session, principal, settings).apply(resource, _values(remote))
    resource.sourcetype = "REMOTE"
    resource.name = remote.layer_name or remote.title
    resource.thumbnail_url = web_url(remote.thumbnail_url)
    resource.blob = _remote_blob(harvester, remote)
    if resource.resource_type == "dataset" and not remote.metadata_only:
        resource.subtype = "remote"
    box = remote.bbox or WORLD
    resource_writer.set_extent(resource, box, "EPSG:4326", box)
    if resource.resource_type == "document" and not remote.metadata_only:
        _document(session, resource, remote)
    session.flush()
    return resource


def _document(session: Session, resource: Resource, remote: RemoteResource) -> None:
    extension = (remote.extension or DEFAULT_EXTENSION).lower()[:16]
    document = session.get(Document, resource.id)
    if document is None:
        document = Document(resource_id=resource.id)
        session.add(document)
    document.extension = extension
    document.mime_type = document_content.mime_type_of(extension)
    document.doc_url = web_url(remote.doc_url)
    if document.doc_url is None:
        raise InvalidInput(f"the remote document {remote.unique_identifier} has no http(s) URL")
    document.file_path = document.file_name = None
    resource.subtype = document_content.subtype_of(extension)
