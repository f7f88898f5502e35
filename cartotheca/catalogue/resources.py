"""cartotheca.catalogue.resources: list, read, create, patch and delete resources of every type."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, column, delete, func, or_, select, table
from sqlalchemy import inspect as sa_inspect
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, joinedload, selectinload

from cartotheca import timeutil
from cartotheca.catalogue import events, query
from cartotheca.catalogue import permissions as perms
from cartotheca.catalogue.auth import Principal
from cartotheca.catalogue.query import Field, FieldMap
from cartotheca.db.base import utcnow
from cartotheca.db.models import (
    Category,
    ContactRole,
    Favorite,
    Group,
    Keyword,
    License,
    Region,
    Resource,
    RestrictionCodeType,
    SpatialRepresentationType,
    ThesaurusKeyword,
    User,
    resource_keywords,
    resource_regions,
    resource_tkeywords,
)
from cartotheca.errors import (
    InvalidInput,
    InvalidQuery,
    NotAuthenticated,
    NotFound,
    PermissionDenied,
)
from cartotheca.settings import Settings

RESOURCE_TYPES = ("dataset", "map", "document", "service", "geostory", "dashboard", "geoapp")
SUBTYPES = ("raster", "vector", "vector_time", "remote")
CONTACT_ROLES = (
    "poc", "metadata_author", "processor", "publisher", "custodian", "distributor",
    "resource_user", "resource_provider", "originator", "principal_investigator",
)
DATE_TYPES = ("creation", "publication", "revision")


def _to_one(fk, target_pk, target_col) -> Field:
    return Field(
        target_col,
        via=lambda cond: and_(fk.is_not(None), fk.in_(select(target_pk).where(cond))),
        sort=select(target_col).where(target_pk == fk).correlate(Resource).scalar_subquery(),
    )


def _to_many(assoc_fk, assoc_target, target_pk, target_col, kind: type = str) -> Field:
    return Field(
        target_col,
        kind=kind,
        via=lambda cond: Resource.id.in_(
            select(assoc_fk).join_from(assoc_fk.table, target_pk.table, assoc_target == target_pk)
            .where(cond)
        ),
        sortable=False,
    )


def _contacts(role: str, column) -> Field:
    return Field(
        column,
        kind=int if column.key == "id" else str,
        via=lambda cond: Resource.id.in_(
            select(ContactRole.resource_id).join(User, User.id == ContactRole.user_id)
            .where(ContactRole.role == role, cond)
        ),
        sortable=False,
    )


def _fields() -> dict[str, Field]:
    scalar_str = (
        "uuid", "title", "abstract", "resource_type", "subtype", "alternate", "name", "date_type",
        "language", "srid", "state", "sourcetype", "purpose", "attribution", "doi", "edition",
        "maintenance_frequency", "constraints_other", "supplemental_information",
        "data_quality_statement", "thumbnail_url",
    )
    out: dict[str, Field] = {n: Field(getattr(Resource, n)) for n in scalar_str}
    for n in ("featured", "is_published", "is_approved", "advertised", "metadata_only",
              "processed", "is_copyable", "dirty_state"):
        out[n] = Field(getattr(Resource, n), kind=bool, nullable=False)
    for n in ("date", "created", "last_updated", "temporal_extent_start", "temporal_extent_end"):
        out[n] = Field(getattr(Resource, n), kind=dt.datetime)
    for n in ("popular_count", "share_count", "rating"):
        out[n] = Field(getattr(Resource, n), kind=int, nullable=False)
    out["pk"] = out["id"] = Field(Resource.id, kind=int, nullable=False)
    out["owner"] = out["owner.pk"] = out["owner.id"] = Field(Resource.owner_id, kind=int)
    for n in ("username", "first_name", "last_name", "email"):
        out[f"owner.{n}"] = _to_one(Resource.owner_id, User.id, getattr(User, n))
    out["category"] = out["category.id"] = Field(Resource.category_id, kind=int)
    for n in ("identifier", "gn_description", "description"):
        out[f"category.{n}"] = _to_one(Resource.category_id, Category.id, getattr(Category, n))
    out["license"] = out["license.id"] = Field(Resource.license_id, kind=int)
    for n in ("identifier", "name", "abbreviation"):
        out[f"license.{n}"] = _to_one(Resource.license_id, License.id, getattr(License, n))
    out["group"] = out["group.pk"] = out["group.id"] = Field(Resource.group_id, kind=int)
    out["group.name"] = _to_one(Resource.group_id, Group.id, Group.name)
    out["restriction_code_type.identifier"] = _to_one(
        Resource.restriction_code_type_id, RestrictionCodeType.id, RestrictionCodeType.identifier)
    out["spatial_representation_type.identifier"] = _to_one(
        Resource.spatial_representation_type_id, SpatialRepresentationType.id,
        SpatialRepresentationType.identifier)
    kw = (resource_keywords.c.resource_id, resource_keywords.c.keyword_id, Keyword.id)
    out["keywords"] = out["keywords.id"] = _to_many(*kw, Keyword.id, kind=int)
    out["keywords.name"] = _to_many(*kw, Keyword.name)
    out["keywords.slug"] = _to_many(*kw, Keyword.slug)
    rg = (resource_regions.c.resource_id, resource_regions.c.region_id, Region.id)
    out["regions"] = out["regions.id"] = _to_many(*rg, Region.id, kind=int)
    out["regions.name"] = _to_many(*rg, Region.name)
    out["regions.code"] = _to_many(*rg, Region.code)
    tk = (resource_tkeywords.c.resource_id, resource_tkeywords.c.tkeyword_id, ThesaurusKeyword.id)
    out["tkeywords"] = out["tkeywords.id"] = _to_many(*tk, ThesaurusKeyword.id, kind=int)
    out["tkeywords.name"] = _to_many(*tk, ThesaurusKeyword.alt_label)
    out["tkeywords.uri"] = _to_many(*tk, ThesaurusKeyword.about)
    for role in CONTACT_ROLES:
        out[f"{role}.username"] = _contacts(role, User.username)
        out[f"{role}.pk"] = out[role] = _contacts(role, User.id)
    return out


RESOURCE_FIELDS = FieldMap(
    fields=_fields(),
    search_fields={"title": Resource.title, "abstract": Resource.abstract,
                   "purpose": Resource.purpose, "alternate": Resource.alternate,
                   "name": Resource.name, "supplemental_information": Resource.supplemental_information},
    default_search_fields=("title", "abstract"),
    default_sort=(Resource.created.desc(),),
    tiebreak=Resource.id,
)

# The SQLite R*Tree kept in step with resources by triggers (migration 0001).
RTREE = table("resources_extent", column("id"), column("minx"), column("maxx"), column("miny"),
              column("maxy"))

LOAD_OPTIONS = (
    joinedload(Resource.owner),
    joinedload(Resource.category),
    joinedload(Resource.license),
    joinedload(Resource.group),
    joinedload(Resource.restriction_code_type),
    joinedload(Resource.spatial_representation_type),
    selectinload(Resource.keywords),
    selectinload(Resource.regions),
    selectinload(Resource.tkeywords).joinedload(ThesaurusKeyword.thesaurus),
    selectinload(Resource.tkeywords).selectinload(ThesaurusKeyword.labels),
    selectinload(Resource.contacts).joinedload(ContactRole.user),
)


@dataclass
class Listing:
    """One page of a list, with what the wire envelope needs."""

    rows: Sequence[Any]
    total: int | None  # None when the request asked for no count (total=false)
    page: int
    page_size: int | None
    perms: dict[int, list[str]] = field(default_factory=dict)
    favorites: frozenset[int] = frozenset()
    has_next: bool | None = None  # known without a count: one row past the page was asked for


@dataclass(frozen=True)
class ListContext:
    session: Session
    principal: Principal
    settings: Settings
    params: Mapping[str, list[str]]
    items: Sequence[tuple[str, str]]


def paginate(session: Session, stmt: Select, order: Sequence[Any], ctx: ListContext,
             options: Sequence[Any] = ()) -> tuple[Sequence[Any], int, int, int | None]:
    """Count, then fetch one page: two statements whatever the filters."""
    page = query.parse_page(
        ctx.params,
        default_size=ctx.settings.API_LIMIT_PER_PAGE,
        search_size=ctx.settings.DEFAULT_SEARCH_SIZE,
        max_size=ctx.settings.API_MAX_PAGE_SIZE,
    )
    total = session.scalar(select(func.count()).select_from(stmt.order_by(None).subquery())) or 0
    number = page.number
    if page.size is None:
        last = 1
    else:
        last = max(1, -(-total // page.size))
    if number is None:
        number = last
    if number > last:
        raise NotFound("Invalid page.")
    stmt = stmt.order_by(*order)
    if page.size is not None:
        stmt = stmt.limit(page.size).offset((number - 1) * page.size)
    if not options:
        return session.scalars(stmt).all(), total, number, page.size
    return _load_page(session, stmt, options), total, number, page.size


def paginate_uncounted(session: Session, stmt: Select, order: Sequence[Any], ctx: ListContext,
                       options: Sequence[Any] = ()) -> tuple[Sequence[Any], bool, int, int]:
    """One page without the count (``total=false``): the page and one row more, which says
    whether a next page exists. Counting every row the requester may see costs far more than the
    page itself on a large catalogue (the page walks an index and stops early)."""
    page = query.parse_page(
        ctx.params,
        default_size=ctx.settings.API_LIMIT_PER_PAGE,
        search_size=ctx.settings.DEFAULT_SEARCH_SIZE,
        max_size=ctx.settings.API_MAX_PAGE_SIZE,
    )
    if page.number is None or page.size is None:
        raise InvalidQuery("total=false needs a page number and a page size")
    stmt = stmt.order_by(*order).limit(page.size + 1).offset((page.number - 1) * page.size)
    rows = _load_page(session, stmt, options) if options else session.scalars(stmt).all()
    if not rows and page.number > 1:
        raise NotFound("Invalid page.")
    return rows[:page.size], len(rows) > page.size, page.number, page.size


def wants_total(params: Mapping[str, list[str]]) -> bool:
    raw = (params.get("total") or [None])[0]
    return True if raw is None else query.strict_bool(raw, "total")


def _load_page(session: Session, stmt: Select, options: Sequence[Any]) -> list[Any]:
    """Ids of the page first, then the rows with their joined loads.

    With OFFSET, joining owner, category, licence ... in the paging query would make the
    database build those joins for every skipped row as well; this way only the page's rows
    are joined, whatever the page number.
    """
    entity = stmt.column_descriptions[0]["entity"]
    pk = sa_inspect(entity).primary_key[0]
    ids = list(session.scalars(stmt.with_only_columns(pk)))
    if not ids:
        return []
    rows = session.scalars(select(entity).where(pk.in_(ids)).options(*options)).unique().all()
    by_id = {getattr(row, pk.key): row for row in rows}
    return [by_id[i] for i in ids if i in by_id]


def resource_clauses(ctx: ListContext, fields: FieldMap = RESOURCE_FIELDS) -> list[ColumnElement]:
    """Visibility, filter{}, search, favorite and extent as WHERE clauses."""
    advertised = (ctx.params.get("advertised") or [None])[0]
    clauses: list[ColumnElement] = [perms.visible_to(ctx.principal, ctx.settings, advertised=advertised)]
    clauses += query.compile_filters(ctx.items, fields)
    searched = query.compile_search(ctx.params, fields)
    if searched is not None:
        clauses.append(searched)
    favorite = (ctx.params.get("favorite") or [None])[0]
    if favorite is not None:
        if query.strict_bool(favorite, "favorite"):
            if ctx.principal.id is None:
                clauses.append(Resource.id.is_(None))
            else:
                clauses.append(Resource.id.in_(
                    select(Favorite.resource_id).where(Favorite.user_id == ctx.principal.id)))
    extents = ctx.params.get("extent")
    if extents:
        clauses.append(extent_clause(ctx.session, query.parse_extent(extents)))
    return clauses


def extent_clause(session: Session, boxes) -> ColumnElement[bool]:
    """Intersection with any of the lon/lat boxes, served by the spatial index."""
    dialect = session.get_bind().dialect.name
    parts = []
    for minx, miny, maxx, maxy in boxes:
        if dialect == "sqlite":
            # Columns of the R*Tree (not text()) so each box gets its own bound parameters.
            rtree = RTREE.c
            parts.append(Resource.id.in_(
                select(rtree.id).where(rtree.minx <= maxx, rtree.maxx >= minx,
                                       rtree.miny <= maxy, rtree.maxy >= miny)
            ))
        else:
            box = func.box(func.point(Resource.ll_minx, Resource.ll_miny),
                           func.point(Resource.ll_maxx, Resource.ll_maxy))
            probe = func.box(func.point(minx, miny), func.point(maxx, maxy))
            parts.append(box.op("&&")(probe))
    return or_(*parts)


def list_resources(ctx: ListContext, *, base: Sequence[ColumnElement] = (),
                   fields: FieldMap = RESOURCE_FIELDS) -> Listing:
    stmt = select(Resource).where(*base, *resource_clauses(ctx, fields))
    order = query.compile_sort(ctx.params, fields)
    if not wants_total(ctx.params):
        rows, has_next, number, size = paginate_uncounted(ctx.session, stmt, order, ctx, LOAD_OPTIONS)
        return decorate(ctx.session, ctx.principal, Listing(rows, None, number, size, has_next=has_next))
    rows, total, number, size = paginate(ctx.session, stmt, order, ctx, LOAD_OPTIONS)
    return decorate(ctx.session, ctx.principal, Listing(rows, total, number, size))


def decorate(session: Session, principal: Principal, listing: Listing) -> Listing:
    """Add the requester's perms and favourites for the page: two statements."""
    listing.perms = perms.perms_for(session, principal, listing.rows)
    if principal.id is not None and listing.rows:
        listing.favorites = frozenset(session.scalars(
            select(Favorite.resource_id).where(
                Favorite.user_id == principal.id,
                Favorite.resource_id.in_([r.id for r in listing.rows]),
            )
        ))
    return listing


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
                     resources: Sequence[Resource]) -> int:
    """Delete ``resources`` in the caller's transaction. What they stored (a dataset's data, a
    document's file, thumbnails) is removed only once that transaction commits."""
    for resource in resources:
        require(session, principal, resource, perms.DELETE)
    ids = [r.id for r in resources]
    if ids:
        from cartotheca.catalogue import documents, publishing, thumbnails

        documents.forget_files(session, ids)
        publishing.forget_data(session, settings, ids)
        thumbnails.forget_thumbnails(session, settings, resources)
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


def matching_ids_for_update(ctx: ListContext, base: Sequence[ColumnElement]) -> Select:
    """Rows a patch-all touches: the listed, visible rows the requester may change."""
    clauses = resource_clauses(ctx)
    if not ctx.principal.is_superuser:
        own = Resource.owner_id == ctx.principal.id
        clauses.append(or_(own, perms.has_grant(ctx.principal, perms.CHANGE_METADATA)))
    return select(Resource.id).where(*base, *clauses)


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
                  defaults: Mapping[str, Any], *, copy_data: bool = True, key: str | None = None,
                  on_stored: Callable[[Callable[[], None]], None] | None = None) -> Resource:
    """A new resource owned by ``principal`` with the source's metadata (GeoNode's copy).

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
    if source.resource_type == "document":
        from cartotheca.catalogue import documents  # a copied document gets its own file

        documents.copy_document(session, settings, source, clone)
    if source.resource_type == "map":
        from cartotheca.catalogue import maps  # a copied map shows the same layers

        maps.copy_layers(session, principal, settings, source, clone)
    if source.resource_type == "dataset" and copy_data:
        from cartotheca.catalogue import dataset_copies  # a copied dataset gets its own data

        dataset_copies.copy_dataset(session, settings, source, clone, key=key, on_stored=on_stored)
    return clone

