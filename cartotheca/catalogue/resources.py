"""cartotheca.catalogue.resources: find resources of every type, check access, favourites.

Lists of resources are paged by ``catalogue.query``; this module reads one resource (or a given
set), checks what the requester may do with it, and keeps favourites. Writing is in
``resource_writer`` (the fields) and ``resource_lifecycle`` (create, patch, copy, delete).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from cartotheca.catalogue import permissions as perms
from cartotheca.catalogue.auth import Principal
from cartotheca.catalogue.query.paging import Listing
from cartotheca.catalogue.query.resource_list import LOAD_OPTIONS, decorate
from cartotheca.db.models import Favorite, Resource
from cartotheca.errors import InvalidInput, NotAuthenticated, NotFound, PermissionDenied
from cartotheca.settings import Settings

RESOURCE_TYPES = ("dataset", "map", "document", "service", "geostory", "dashboard", "geoapp")
SUBTYPES = ("raster", "vector", "vector_time", "remote")
DATE_TYPES = ("creation", "publication", "revision")


def parse_id(raw: str | int) -> int:
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise NotFound() from None
    if value < 1 or value > 2**63 - 1:
        raise NotFound()
    return value


def get_resource(session: Session, principal: Principal, settings: Settings, raw_id: str | int,
                 *, resource_type: Sequence[str] | None = None, load: bool = True) -> Listing:
    """One resource for detail views, with the GeoNode answers for the forbidden and hidden."""
    resource_id = parse_id(raw_id)
    stmt = select(Resource).where(Resource.id == resource_id)
    if resource_type:
        stmt = stmt.where(Resource.resource_type.in_(resource_type))
    # The usual case costs one query: the row, already filtered by visibility.
    visible = stmt if principal.is_superuser else stmt.where(
        perms.visible_to(principal, settings, check_advertised=False))
    resource = session.scalars(visible.options(*LOAD_OPTIONS) if load else visible).unique().first()
    if resource is None:
        # Tell the cases apart: missing (404), not viewable (401/403), viewable but hidden (404).
        hidden = session.scalars(stmt).first()
        if hidden is None:
            raise NotFound()
        ensure_visible(session, principal, settings, hidden)
        raise NotFound()
    return decorate(session, principal, Listing([resource], 1, 1, 1))


def ensure_visible(session: Session, principal: Principal, settings: Settings,
                   resource: Resource) -> None:
    if principal.is_superuser:
        return
    if not perms.can(session, principal, resource, perms.VIEW):
        if principal.id is None:
            raise NotAuthenticated()
        raise PermissionDenied()
    visible = session.scalar(
        select(Resource.id).where(Resource.id == resource.id,
                                  perms.visible_to(principal, settings, check_advertised=False))
    )
    if visible is None:
        raise NotFound()


def require(session: Session, principal: Principal, resource: Resource, codename: str) -> None:
    if not perms.can(session, principal, resource, codename):
        if principal.id is None:
            raise NotAuthenticated()
        raise PermissionDenied()


# ---------------------------------------------------------------------------------------
# writes

def load_for_write(session: Session, principal: Principal, settings: Settings, raw_id: Any,
                   resource_type: Sequence[str] | None = None) -> Resource:
    listing = get_resource(session, principal, settings, raw_id, resource_type=resource_type)
    return listing.rows[0]


# ---------------------------------------------------------------------------------------
# favourites and counts


def add_favorite(session: Session, principal: Principal, resource: Resource) -> None:
    if principal.id is None:
        raise NotAuthenticated()
    exists = session.scalar(select(Favorite.id).where(
        Favorite.user_id == principal.id, Favorite.resource_id == resource.id))
    if exists:
        raise InvalidInput("Resource is already in favorites")
    try:
        with session.begin_nested():
            session.add(Favorite(user_id=principal.id, resource_id=resource.id))
    except IntegrityError:
        # The same user's other request added it between the check and the insert.
        raise InvalidInput("Resource is already in favorites") from None


def remove_favorite(session: Session, principal: Principal, resource: Resource) -> None:
    if principal.id is None:
        raise NotAuthenticated()
    result = session.execute(delete(Favorite).where(
        Favorite.user_id == principal.id, Favorite.resource_id == resource.id))
    if not result.rowcount:
        raise NotFound("Resource not in favorites")


def type_counts(session: Session, principal: Principal, settings: Settings) -> dict[str, int]:
    rows = session.execute(
        select(Resource.resource_type, func.count())
        .where(perms.visible_to(principal, settings))
        .group_by(Resource.resource_type)
    ).all()
    return {name: count for name, count in rows}


def bulk_ids(body: Any, plural: str) -> list[int]:
    """The ids of a bulk DELETE/PATCH body: a list of {id} objects or {plural: [...]}."""
    items = body.get(plural) if isinstance(body, Mapping) and set(body) == {plural} else body
    if not isinstance(items, list) or not items:
        raise InvalidInput(f"Expected a list of objects with \"id\", or {{\"{plural}\": [...]}}")
    ids = []
    for item in items:
        ident = item.get("id", item.get("pk")) if isinstance(item, Mapping) else item
        if isinstance(ident, str) and ident.isdigit():
            ident = int(ident)
        if not isinstance(ident, int) or isinstance(ident, bool):
            raise InvalidInput("Each item needs an integer \"id\"")
        ids.append(ident)
    return ids


def load_many(session: Session, ids: Sequence[int], types: Sequence[str] | None = None
              ) -> list[Resource]:
    stmt = select(Resource).where(Resource.id.in_(ids)).options(*LOAD_OPTIONS)
    if types:
        stmt = stmt.where(Resource.resource_type.in_(types))
    found = {r.id: r for r in session.scalars(stmt).unique()}
    missing = [i for i in ids if i not in found]
    if missing:
        raise NotFound(f"Not found: {missing[0]}")
    return [found[i] for i in ids]
