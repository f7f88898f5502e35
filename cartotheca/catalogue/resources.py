"""cartotheca.catalogue.resources: read, create, patch and delete resources of every type.

Lists of resources are paged by ``catalogue.query``; this module reads one resource and writes.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from cartotheca import timeutil
from cartotheca.catalogue import events
from cartotheca.catalogue import permissions as perms
from cartotheca.catalogue.auth import Principal
from cartotheca.catalogue.kinds import CopyRequest, Kinds
from cartotheca.catalogue.query.paging import Listing
from cartotheca.catalogue.query.resource_list import CONTACT_ROLES, LOAD_OPTIONS, decorate
from cartotheca.db.base import utcnow
from cartotheca.db.models import (
    Category,
    ContactRole,
    Favorite,
    Group,
    License,
    Resource,
    RestrictionCodeType,
    SpatialRepresentationType,
    ThesaurusKeyword,
    User,
)
from cartotheca.errors import (
    InvalidInput,
    NotAuthenticated,
    NotFound,
    PermissionDenied,
)
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

TO_ONE = ("category", "license", "group", "restriction_code_type", "spatial_representation_type")
READ_ONLY = frozenset({
    "pk", "id", "uuid", "polymorphic_ctype_id", "bbox_polygon", "ll_bbox_polygon", "perms",
    "links", "link", "detail_url", "embed_url", "thumbnail_url", "download_url", "download_urls",
    "created", "last_updated", "alternate", "owner", "regions", "raw_abstract", "raw_purpose",
    "raw_constraints_other", "raw_supplemental_information", "raw_data_quality_statement",
    "processed", "state", "sourcetype", "is_copyable", "favorite", "resource_type", "subtype",
    "popular_count", "share_count", "rating", "dirty_state",
})
TEXT_FIELDS = (
    "title", "abstract", "purpose", "attribution", "doi", "edition", "maintenance_frequency",
    "constraints_other", "supplemental_information", "data_quality_statement",
)
FLAG_FIELDS = ("featured", "is_published", "is_approved", "advertised", "metadata_only",
               "metadata_uploaded_preserve")


@dataclass
class Writer:
    """Applies a client's field object to a resource, validating every value first."""

    session: Session
    principal: Principal
    settings: Settings
    current: dict[str, Any] | None = None  # the wire record, to accept unchanged read-only echoes

    def apply(self, resource: Resource, data: Mapping[str, Any], *, creating: bool = False) -> None:
        if not isinstance(data, Mapping):
            raise InvalidInput("Invalid data. Expected a dictionary.")
        for key, value in data.items():
            if key in READ_ONLY and not (creating and key in ("resource_type", "subtype")):
                if self.current is not None and self.current.get(key) == value:
                    continue
                raise InvalidInput(f"{key}: this field is read-only and cannot be changed")
            handler = getattr(self, f"_set_{key}", None)
            if handler is not None:
                handler(resource, value)
            elif key in TEXT_FIELDS:
                resource.__setattr__(key, _text(key, value, required=key == "title"))
            elif key in FLAG_FIELDS:
                self._flag(resource, key, value)
            elif key in ("date", "temporal_extent_start", "temporal_extent_end"):
                setattr(resource, key, _datetime(key, value, required=key == "date"))
            elif key in CONTACT_ROLES:
                self._contacts(resource, key, value)
            elif key in ("resource_type", "subtype"):
                self._type(resource, key, value)
            else:
                raise InvalidInput(f"{key}: unknown field")
        resource.last_updated = utcnow()

    def _type(self, resource: Resource, key: str, value: Any) -> None:
        allowed = RESOURCE_TYPES if key == "resource_type" else SUBTYPES
        if value is None and key == "subtype":
            resource.subtype = None
            return
        if value not in allowed:
            raise InvalidInput(f"{key}: \"{value}\" is not a valid choice.")
        setattr(resource, key, value)

    def _flag(self, resource: Resource, key: str, value: Any) -> None:
        if not isinstance(value, bool):
            raise InvalidInput(f"{key}: must be a boolean")
        if getattr(resource, key) == value:
            return
        if key == "featured" and not self.principal.is_staff:
            raise PermissionDenied("Only staff members can change the featured flag.")
        if key == "is_approved" and not self.principal.is_staff:
            raise PermissionDenied("Only staff members can approve resources.")
        if key == "is_published":
            if self.settings.RESOURCE_PUBLISHING and not self.principal.is_staff:
                raise PermissionDenied("Only staff members can publish or unpublish resources.")
        setattr(resource, key, value)

    def _set_date_type(self, resource: Resource, value: Any) -> None:
        if value not in DATE_TYPES:
            raise InvalidInput(f"date_type: \"{value}\" is not a valid choice.")
        resource.date_type = value

    def _set_language(self, resource: Resource, value: Any) -> None:
        if not isinstance(value, str) or not (2 <= len(value) <= 3) or not value.isalpha():
            raise InvalidInput("language: expected an ISO 639 code such as \"eng\"")
        resource.language = value.lower()

    def _set_srid(self, resource: Resource, value: Any) -> None:
        if not isinstance(value, str) or not value.upper().startswith("EPSG:"):
            raise InvalidInput("srid: expected a code such as \"EPSG:4326\"")
        resource.srid = value.upper()

    def _set_category(self, resource: Resource, value: Any) -> None:
        resource.category_id = self._lookup(Category, Category.identifier, "category", value)

    def _set_license(self, resource: Resource, value: Any) -> None:
        resource.license_id = self._lookup(License, License.identifier, "license", value)

    def _set_restriction_code_type(self, resource: Resource, value: Any) -> None:
        resource.restriction_code_type_id = self._lookup(
            RestrictionCodeType, RestrictionCodeType.identifier, "restriction_code_type", value)

    def _set_spatial_representation_type(self, resource: Resource, value: Any) -> None:
        resource.spatial_representation_type_id = self._lookup(
            SpatialRepresentationType, SpatialRepresentationType.identifier,
            "spatial_representation_type", value)

    def _set_group(self, resource: Resource, value: Any) -> None:
        if value is None:
            resource.group_id = None
            return
        ident = value.get("pk", value.get("id")) if isinstance(value, Mapping) else value
        name = value.get("name") if isinstance(value, Mapping) else None
        stmt = select(Group.id).where(Group.internal.is_(False))
        if isinstance(ident, int) and not isinstance(ident, bool):
            stmt = stmt.where(Group.id == ident)
        elif isinstance(name, str):
            stmt = stmt.where(Group.name == name)
        else:
            raise InvalidInput("group: expected {\"pk\": <group id>} or null")
        group_id = self.session.scalar(stmt)
        if group_id is None:
            raise InvalidInput(f"group: unknown group {ident if ident is not None else name}")
        resource.group_id = group_id

    def _lookup(self, model, column, key: str, value: Any) -> int | None:
        if value is None:
            return None
        if isinstance(value, Mapping):
            if "identifier" in value:
                value = value["identifier"]
            elif "id" in value or "pk" in value:
                value = value.get("id", value.get("pk"))
            else:
                raise InvalidInput(f"{key}: expected {{\"identifier\": ...}}")
        if isinstance(value, bool):
            raise InvalidInput(f"{key}: invalid value")
        if isinstance(value, int):
            found = self.session.scalar(select(model.id).where(model.id == value))
        elif isinstance(value, str):
            found = self.session.scalar(select(model.id).where(column == value))
        else:
            raise InvalidInput(f"{key}: invalid value")
        if found is None:
            raise InvalidInput(f"{key}: unknown {key} {value!r}")
        return found

    def _set_keywords(self, resource: Resource, value: Any) -> None:
        from cartotheca.catalogue.reference import keywords_by_name

        if not isinstance(value, list):
            raise InvalidInput("keywords: expected a list")
        names = []
        for item in value:
            name = item.get("name") if isinstance(item, Mapping) else item
            if not isinstance(name, str) or not name.strip() or len(name) > 255:
                raise InvalidInput("keywords: each keyword needs a non-empty name")
            names.append(name.strip())
        resource.keywords = keywords_by_name(self.session, names)

    def _set_tkeywords(self, resource: Resource, value: Any) -> None:
        if not isinstance(value, list):
            raise InvalidInput("tkeywords: expected a list")
        ids, uris = [], []
        for item in value:
            if isinstance(item, int) and not isinstance(item, bool):
                ids.append(item)
            elif isinstance(item, Mapping) and isinstance(item.get("id"), int):
                ids.append(item["id"])
            elif isinstance(item, Mapping) and isinstance(item.get("uri"), str):
                uris.append(item["uri"])
            elif isinstance(item, str):
                uris.append(item)
            else:
                raise InvalidInput("tkeywords: expected ids or {\"uri\": ...} objects")
        found = self.session.scalars(
            select(ThesaurusKeyword).where(
                or_(ThesaurusKeyword.id.in_(ids), ThesaurusKeyword.about.in_(uris)))
        ).all() if (ids or uris) else []
        if len(found) < len(set(ids)) + len(set(uris)):
            raise InvalidInput("tkeywords: unknown thesaurus keyword")
        resource.tkeywords = list(found)

    def _contacts(self, resource: Resource, role: str, value: Any) -> None:
        if not isinstance(value, list):
            raise InvalidInput(f"{role}: expected a list of users")
        users = []
        for item in value:
            if not isinstance(item, Mapping):
                raise InvalidInput(f"{role}: expected {{\"pk\": <user id>}} items")
            ident = item.get("pk", item.get("id"))
            if isinstance(ident, str) and ident.isdigit():
                ident = int(ident)
            if isinstance(ident, int) and not isinstance(ident, bool):
                user = self.session.get(User, ident)
            elif isinstance(item.get("username"), str):
                user = self.session.scalar(select(User).where(User.username == item["username"]))
            else:
                raise InvalidInput(f"{role}: expected {{\"pk\": <user id>}} items")
            if user is None:
                raise InvalidInput(f"{role}: unknown user {ident or item.get('username')}")
            users.append(user)
        # Keep the rows of users already in the role: the unit of work inserts before it deletes,
        # so a fresh row for the same (resource, role, user) would break the unique constraint.
        existing = {c.user_id: c for c in resource.contacts if c.role == role}
        resource.contacts = [c for c in resource.contacts if c.role != role] + [
            existing.get(u.id) or ContactRole(role=role, user_id=u.id, user=u)
            for u in dict.fromkeys(users)
        ]

    def _set_extent(self, resource: Resource, value: Any) -> None:
        if self.current is not None and self.current.get("extent") == value:
            return  # an echo of the record just read, as clients PUT back what they GET
        if resource.resource_type in ("dataset", "map"):
            raise InvalidInput("extent: this field is read-only for this resource type",
                               code="invalid_resource_exception")
        coords = value.get("coords") if isinstance(value, Mapping) else value
        if not isinstance(coords, list) or len(coords) != 4 or not all(
                isinstance(c, (int, float)) and not isinstance(c, bool) for c in coords):
            raise InvalidInput("extent: expected {\"coords\": [minx, miny, maxx, maxy]}",
                               code="invalid_resource_exception")
        minx, miny, maxx, maxy = (float(c) for c in coords)
        if not (-180 <= minx <= maxx <= 180 and -90 <= miny <= maxy <= 90):
            raise InvalidInput("extent: not a valid lon/lat box", code="invalid_resource_exception")
        set_extent(resource, (minx, miny, maxx, maxy), "EPSG:4326", (minx, miny, maxx, maxy))

    def _set_blob(self, resource: Resource, value: Any) -> None:
        if not isinstance(value, (dict, list)) and value is not None:
            raise InvalidInput("blob: expected a JSON object")
        resource.blob = value

    _set_data = _set_blob


def set_extent(resource: Resource, native, srid: str, lonlat) -> None:
    resource.bbox_x0, resource.bbox_y0, resource.bbox_x1, resource.bbox_y1 = native
    resource.srid = srid
    resource.ll_minx, resource.ll_miny, resource.ll_maxx, resource.ll_maxy = lonlat


def _text(key: str, value: Any, *, required: bool = False) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{key}: expected a string")
    if "\x00" in value:
        raise InvalidInput(f"{key}: null characters are not allowed")
    if required and not value.strip():
        raise InvalidInput(f"{key}: this field may not be blank.")
    if key == "title" and len(value) > 255:
        raise InvalidInput("title: ensure this field has no more than 255 characters.")
    return value


def _datetime(key: str, value: Any, *, required: bool = False) -> dt.datetime | None:
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{key}: expected an ISO 8601 date-time")
    try:
        return timeutil.parse_datetime(value)
    except ValueError:
        raise InvalidInput(f"{key}: expected an ISO 8601 date-time") from None


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
    from cartotheca.catalogue.accounts import internal_group_ids

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



def _valid_uuid(value: Any, session: Session) -> str:
    import uuid as uuid_mod

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

