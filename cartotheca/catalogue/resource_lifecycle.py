"""cartotheca.catalogue.resource_lifecycle: create, patch, copy and delete resources of every type.

What a type adds (a document's file, a map's layers, a dataset's data) is its kind's hook
(``catalogue.kinds``), so this module imports no family.
"""

from __future__ import annotations

import uuid as uuid_mod
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from cartotheca.catalogue import events
from cartotheca.catalogue import permissions as perms
from cartotheca.catalogue.accounts import internal_group_ids
from cartotheca.catalogue.auth import Principal
from cartotheca.catalogue.kinds import CopyRequest, Kinds
from cartotheca.catalogue.resource_writer import TO_ONE, Writer
from cartotheca.catalogue.resources import RESOURCE_TYPES, require
from cartotheca.db.models import ContactRole, Resource
from cartotheca.errors import InvalidInput, NotAuthenticated, PermissionDenied
from cartotheca.settings import Settings


def create_resource(session: Session, principal: Principal, settings: Settings,
                    data: Mapping[str, Any], *, resource_type: str | None = None,
                    uuid: str | None = None) -> Resource:
    if principal.id is None:
        raise NotAuthenticated()
    if not isinstance(data, Mapping):
        raise InvalidInput("Invalid data. Expected a dictionary.")
    if not data.get("title"):
        raise InvalidInput("title: this field is required.")
    resource = Resource(
        resource_type=resource_type or data.get("resource_type") or "dataset",
        title="",
        owner_id=principal.id,
        owner=principal.user,
        **({"uuid": _valid_uuid(uuid, session)} if uuid else {}),
        is_approved=not settings.ADMIN_MODERATE_UPLOADS,
        is_published=True,
        keywords=[], regions=[], tkeywords=[], contacts=[],
    )
    if resource.resource_type not in RESOURCE_TYPES:
        raise InvalidInput(f"resource_type: \"{resource.resource_type}\" is not a valid choice.")
    writer = Writer(session, principal, settings)
    body = {k: v for k, v in data.items() if k != "resource_type"}
    # Staff rights are not needed to set flags on a new record: they are its initial values.
    for key in ("featured", "is_approved"):
        if key in body and not principal.is_staff:
            raise PermissionDenied(f"Only staff members can set {key}.")
    writer.apply(resource, body, creating=True)
    if not resource.contacts:
        resource.contacts = [ContactRole(role=r, user_id=principal.id, user=principal.user)
                             for r in ("poc", "metadata_author")]
    session.add(resource)
    session.flush()
    grant_defaults(session, settings, resource)
    return resource


def grant_defaults(session: Session, settings: Settings, resource: Resource) -> None:
    """GeoNode's default perm spec: the public may view and download new resources."""
    anonymous_id, _ = internal_group_ids(session, settings)
    level = "download" if settings.DEFAULT_ANONYMOUS_DOWNLOAD_PERMISSION else "view"
    if settings.DEFAULT_ANONYMOUS_VIEW_PERMISSION:
        perms.grant(session, resource.id, level, group_id=anonymous_id)


def patch_resource(session: Session, principal: Principal, settings: Settings,
                   resource: Resource, data: Mapping[str, Any],
                   current: dict[str, Any] | None = None) -> Resource:
    require(session, principal, resource, perms.CHANGE_METADATA)
    Writer(session, principal, settings, current).apply(resource, data)
    session.flush()
    events.record(session, events.METADATA_UPDATED, resource=resource, actor=principal)
    # The writer sets foreign keys; sessions keep objects after commit, so the loaded related
    # objects would still show the old category/license until expired here.
    session.expire(resource, TO_ONE)
    return resource


def delete_resources(session: Session, principal: Principal, settings: Settings,
                     resources: Sequence[Resource], *, kinds: Kinds) -> int:
    """Delete ``resources`` in the caller's transaction. What they stored (a dataset's data, a
    document's file, thumbnails: each kind's ``forget``) is removed only once that transaction
    commits."""
    for resource in resources:
        require(session, principal, resource, perms.DELETE)
    ids = [r.id for r in resources]
    if ids:
        kinds.forget(session, settings, resources)
        fans = events.favourite_user_ids(session, ids)
        for resource in resources:
            events.record(session, events.RESOURCE_DELETED, resource=resource, actor=principal,
                          notify_user_ids=fans.get(resource.id, ()))
        session.execute(delete(Resource).where(Resource.id.in_(ids)))
    return len(ids)


def _valid_uuid(value: Any, session: Session) -> str:
    try:
        text = str(uuid_mod.UUID(str(value)))
    except ValueError:
        raise InvalidInput(f"uuid: not a valid UUID: {value}") from None
    if session.scalar(select(Resource.id).where(Resource.uuid == text)) is not None:
        raise InvalidInput(f"uuid: a resource with uuid {text} already exists")
    return text


COPIED_COLUMNS = (
    "resource_type", "subtype", "title", "abstract", "purpose", "attribution", "doi", "edition",
    "maintenance_frequency", "constraints_other", "supplemental_information",
    "data_quality_statement", "name", "category_id", "license_id", "group_id",
    "restriction_code_type_id", "spatial_representation_type_id", "date", "date_type",
    "temporal_extent_start", "temporal_extent_end", "language", "srid", "bbox_x0", "bbox_x1",
    "bbox_y0", "bbox_y1", "ll_minx", "ll_miny", "ll_maxx", "ll_maxy", "advertised",
    "metadata_only", "thumbnail_url", "blob",
)


def copy_resource(session: Session, principal: Principal, settings: Settings, source: Resource,
                  defaults: Mapping[str, Any], *, kinds: Kinds, copy_data: bool = True,
                  key: str | None = None,
                  on_stored: Callable[[Callable[[], None]], None] | None = None) -> Resource:
    """A new resource owned by ``principal`` with the source's metadata (GeoNode's copy); the
    source's kind copies what else it has (a document's file, a map's layers, a dataset's data).

    A dataset's copy gets its own stored data unless ``copy_data`` is false (a trial run that
    only checks the input); ``key`` and ``on_stored`` are passed to ``copy_dataset``.
    """
    if not source.is_copyable:
        raise InvalidInput("Resource can not be cloned.")
    clone = Resource(**{c: getattr(source, c) for c in COPIED_COLUMNS},
                     owner_id=principal.id, owner=principal.user,
                     is_published=True, is_approved=not settings.ADMIN_MODERATE_UPLOADS,
                     keywords=list(source.keywords), regions=list(source.regions),
                     tkeywords=list(source.tkeywords), contacts=[])
    clone.contacts = [ContactRole(role=r, user_id=principal.id, user=principal.user)
                      for r in ("poc", "metadata_author")]
    body = {k: v for k, v in dict(defaults).items() if k != "owner"}
    if body:
        Writer(session, principal, settings).apply(clone, body, creating=True)
    session.add(clone)
    session.flush()
    grant_defaults(session, settings, clone)
    kinds.copy(CopyRequest(session, principal, settings, source, clone, copy_data=copy_data, key=key,
                           on_stored=on_stored))
    return clone
