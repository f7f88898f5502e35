"""cartotheca.catalogue.query.resource_list: the resource field map and the resource list.

Which names ``filter{...}``, ``search`` and ``sort[]`` accept on every resource collection,
the WHERE clauses a resource list adds (visibility, favourites, extent), and the named loads
a page of resources is read with.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from sqlalchemy import Column, ColumnElement, Select, and_, column, func, or_, select, table
from sqlalchemy.orm import InstrumentedAttribute, Session, joinedload, selectinload

from cartotheca.catalogue import permissions as perms
from cartotheca.catalogue.auth import Principal
from cartotheca.catalogue.query.compile import compile_filters, compile_search
from cartotheca.catalogue.query.fields import Field, FieldMap, strict_bool
from cartotheca.catalogue.query.paging import ListContext, Listing, page
from cartotheca.catalogue.query.request import FilterTerm, first, parse_extent
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

CONTACT_ROLES = (
    "poc", "metadata_author", "processor", "publisher", "custodian", "distributor",
    "resource_user", "resource_provider", "originator", "principal_investigator",
)


def _to_one(fk: InstrumentedAttribute[Any], target_pk: InstrumentedAttribute[Any],
            target_col: InstrumentedAttribute[Any]) -> Field:
    return Field(
        target_col,
        via=lambda cond: and_(fk.is_not(None), fk.in_(select(target_pk).where(cond))),
        sort=select(target_col).where(target_pk == fk).correlate(Resource).scalar_subquery(),
    )


def _to_many(assoc_fk: Column[Any], assoc_target: Column[Any], target_pk: InstrumentedAttribute[Any],
             target_col: InstrumentedAttribute[Any], kind: type = str) -> Field:
    return Field(
        target_col,
        kind=kind,
        via=lambda cond: Resource.id.in_(
            select(assoc_fk).join_from(assoc_fk.table, target_pk.table, assoc_target == target_pk)
            .where(cond)
        ),
        sortable=False,
    )


def _contacts(role: str, column: InstrumentedAttribute[Any]) -> Field:
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


def resource_clauses(ctx: ListContext, fields: FieldMap = RESOURCE_FIELDS) -> list[ColumnElement[bool]]:
    """Visibility, filter{}, search, favorite and extent as WHERE clauses (facets, patch-all)."""
    language = compile_filters(ctx.items, fields)
    searched = compile_search(ctx.params, fields)
    if searched is not None:
        language.append(searched)
    return [visibility(ctx), *language, *asked_scope(ctx)]


def visibility(ctx: ListContext, *, walked: bool = False) -> ColumnElement[bool]:
    """The rows the requester may see in a list. ``walked``: the form for the first pages
    (``paging.page``'s ``walked_where``)."""
    advertised = first(ctx.params, "advertised")
    return perms.visible_to(ctx.principal, ctx.settings, advertised=advertised, row_by_row=walked)


def asked_scope(ctx: ListContext) -> list[ColumnElement[bool]]:
    """What a resource list adds to the query language when asked: the requester's
    favourites and the extent boxes."""
    clauses: list[ColumnElement[bool]] = []
    favorite = first(ctx.params, "favorite")
    if favorite is not None:
        if strict_bool(favorite, "favorite"):
            if ctx.principal.id is None:
                clauses.append(Resource.id.is_(None))
            else:
                clauses.append(Resource.id.in_(
                    select(Favorite.resource_id).where(Favorite.user_id == ctx.principal.id)))
    extents = ctx.params.get("extent")
    if extents:
        clauses.append(extent_clause(ctx.session, parse_extent(extents)))
    return clauses


def extent_clause(session: Session, boxes: Sequence[tuple[float, float, float, float]]
                  ) -> ColumnElement[bool]:
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


def list_resources(ctx: ListContext, *, base: Sequence[ColumnElement[bool]] = (),
                   fields: FieldMap = RESOURCE_FIELDS,
                   base_terms: Sequence[FilterTerm] | None = None) -> Listing:
    """A page of the resources the requester may see, with their perms and favourites.

    ``base_terms`` says ``base`` again in the query language, for the exact counts of
    ``ctx.counts``; without it a list with a ``base`` is counted in SQL.
    """
    query = ctx.query
    total: Callable[[], int | None] | None = None
    if ctx.counts is not None and (base_terms is not None or not base):
        total = partial(ctx.counts.list_total, ctx, fields, base_terms or ())
    listing = page(ctx.session, select(Resource), query, fields, where=[*base, visibility(ctx)],
                   load=LOAD_OPTIONS, counted=query.wants_total(), total=total,
                   walked_where=[*base, visibility(ctx, walked=True)],
                   where_after_filters=asked_scope(ctx))
    return decorate(ctx.session, ctx.principal, listing)


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


def matching_ids_for_update(ctx: ListContext, base: Sequence[ColumnElement[bool]]
                            ) -> Select[int]:
    """Rows a patch-all touches: the listed, visible rows the requester may change."""
    clauses = resource_clauses(ctx)
    if not ctx.principal.is_superuser:
        own = Resource.owner_id == ctx.principal.id
        clauses.append(or_(own, perms.has_grant(ctx.principal, perms.CHANGE_METADATA)))
    return select(Resource.id).where(*base, *clauses)
