"""cartotheca.catalogue.resource_writer: a resource's fields written from a request body.

``Writer`` checks and applies the body of a create, patch or copy, field by field: text and
dates, flags only staff may set, to-one references by id or name, keywords, regions, contacts
and the extent.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from cartotheca import timeutil
from cartotheca.catalogue.auth import Principal
from cartotheca.catalogue.query.resource_list import CONTACT_ROLES
from cartotheca.catalogue.reference import keywords_by_name
from cartotheca.catalogue.resources import DATE_TYPES, RESOURCE_TYPES, SUBTYPES
from cartotheca.db.base import utcnow
from cartotheca.db.models import (
    Category,
    ContactRole,
    Group,
    License,
    Region,
    Resource,
    RestrictionCodeType,
    SpatialRepresentationType,
    ThesaurusKeyword,
    User,
)
from cartotheca.errors import InvalidInput, PermissionDenied
from cartotheca.settings import Settings

TO_ONE = ("category", "license", "group", "restriction_code_type", "spatial_representation_type")
READ_ONLY = frozenset({
    "pk", "id", "uuid", "polymorphic_ctype_id", "bbox_polygon", "ll_bbox_polygon", "perms",
    "links", "link", "detail_url", "embed_url", "thumbnail_url", "download_url", "download_urls",
    "created", "last_updated", "alternate", "owner", "raw_abstract", "raw_purpose",
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
        if not isinstance(value, list):
            raise InvalidInput("keywords: expected a list")
        names = []
        for item in value:
            name = item.get("name") if isinstance(item, Mapping) else item
            if not isinstance(name, str) or not name.strip() or len(name) > 255:
                raise InvalidInput("keywords: each keyword needs a non-empty name")
            names.append(name.strip())
        resource.keywords = keywords_by_name(self.session, names)

    def _set_regions(self, resource: Resource, value: Any) -> None:
        # GeoNode's serializer ignores regions on PATCH (they are written by the update
        # operation); here the list replaces the resource's regions, each named by its code,
        # name or id, so that a form can also remove one.
        if not isinstance(value, list):
            raise InvalidInput("regions: expected a list of {\"code\": ...} objects")
        names = []
        for item in value:
            if isinstance(item, Mapping):
                item = item.get("code", item.get("name", item.get("id", item.get("pk"))))
            if isinstance(item, bool) or not isinstance(item, (int, str)):
                raise InvalidInput("regions: expected a list of {\"code\": ...} objects")
            names.append(item)
        found, unknown = resolve_regions(self.session, names)
        if unknown:
            raise InvalidInput(f"regions: unknown region {unknown[0]}")
        resource.regions = found

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


def resolve_regions(session: Session, names: list[int | str]) -> tuple[list[Region], list[str]]:
    """The regions named by id, code or name (a name in any case), in the order given without
    repeats, and the names that are none of them."""
    ids = [n for n in names if isinstance(n, int)]
    texts = [n.strip() for n in names if isinstance(n, str) and n.strip()]
    rows = session.scalars(select(Region).where(or_(
        Region.id.in_(ids), Region.code.in_(texts),
        func.lower(Region.name).in_([t.lower() for t in texts])))).all() if (ids or texts) else []
    by_id = {r.id: r for r in rows}
    by_code = {r.code: r for r in rows}
    by_name = {r.name.lower(): r for r in rows}
    found: dict[int, Region] = {}
    unknown: list[str] = []
    for name in names:
        if isinstance(name, int):
            region = by_id.get(name)
        else:
            region = by_code.get(name.strip()) or by_name.get(name.strip().lower())
        if region is None:
            unknown.append(str(name))
        else:
            found.setdefault(region.id, region)
    return list(found.values()), unknown


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
