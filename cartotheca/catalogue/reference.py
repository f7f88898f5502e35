"""cartotheca.catalogue.reference: categories, keywords, thesauri, regions, licenses and their seeds.

The four public reference collections (categories, keywords, tkeywords, regions) are listed
through the one query language; each item's ``count`` is the number of resources the
requester can see that use it, computed in SQL by one grouped statement per page.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import ColumnElement, Select, Table, func, select
from sqlalchemy.orm import Session, joinedload, selectinload

from cartotheca.catalogue import permissions as perms
from cartotheca.catalogue import query
from cartotheca.catalogue.auth import Principal
from cartotheca.catalogue.query import Field, FieldMap, ListContext
from cartotheca.catalogue.resources import parse_id
from cartotheca.db.models import (
    Category,
    Keyword,
    License,
    Region,
    Resource,
    RestrictionCodeType,
    SpatialRepresentationType,
    Thesaurus,
    ThesaurusKeyword,
    resource_keywords,
    resource_regions,
    resource_tkeywords,
)
from cartotheca.errors import InvalidQuery, NotFound
from cartotheca.settings import Settings

DATA = Path(__file__).parent / "data"


def slugify(value: str) -> str:
    text = unicodedata.normalize("NFKD", value).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text.lower())
    return re.sub(r"[-\s]+", "-", text).strip("-_") or "keyword"


def keywords_by_name(session: Session, names: Sequence[str]) -> list[Keyword]:
    """Existing keywords by name, creating the missing ones (as GeoNode does on write)."""
    unique = list(dict.fromkeys(names))
    if not unique:
        return []
    found = {k.name: k for k in session.scalars(select(Keyword).where(Keyword.name.in_(unique)))}
    for name in unique:
        if name not in found:
            slug = _free_slug(session, slugify(name))
            keyword = Keyword(name=name, slug=slug, path="", depth=1, numchild=0)
            session.add(keyword)
            session.flush()
            keyword.path = f"{keyword.id:04d}"
            found[name] = keyword
    return [found[n] for n in unique]


def _free_slug(session: Session, base: str) -> str:
    slug, n = base, 1
    while session.scalar(select(Keyword.id).where(Keyword.slug == slug)) is not None:
        n += 1
        slug = f"{base}-{n}"
    return slug


def _load(name: str) -> list[dict]:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def seed(session: Session) -> None:
    """Insert the reference lists that are missing; existing rows are left as they are."""
    _seed_rows(session, Category, "identifier", _load("categories.json"))
    _seed_rows(session, License, "identifier", _load("licenses.json"))
    _seed_rows(session, RestrictionCodeType, "identifier", _load("restriction_codes.json"))
    _seed_rows(session, SpatialRepresentationType, "identifier",
               _load("spatial_representation_types.json"))
    _seed_regions(session, _load("regions.json"))


def _seed_rows(session: Session, model, key: str, rows: list[dict]) -> None:
    have = set(session.scalars(select(getattr(model, key))))
    for row in rows:
        if row[key] not in have:
            session.add(model(**row))
    session.flush()


def _seed_regions(session: Session, rows: list[dict]) -> None:
    """Regions form a tree (global → continents → countries) with nested-set columns.

    Missing codes are inserted a tree level at a time (parents come first in the file), so a
    fresh database costs a few flushes, not one per country; an up-to-date one costs a SELECT.
    """
    have = {r.code: r for r in session.scalars(select(Region))}
    pending = [row for row in rows if row["code"] not in have]
    if not pending:
        return
    while pending:
        ready = [row for row in pending if not row.get("parent") or row["parent"] in have]
        if not ready:
            raise ValueError(f"regions.json: unknown parent for {pending[0]['code']}")
        for row in ready:
            parent = have.get(row.get("parent") or "")
            region = Region(
                code=row["code"], name=row["name"], parent_id=parent.id if parent else None,
                bbox_x0=row["bbox"][0], bbox_y0=row["bbox"][1],
                bbox_x1=row["bbox"][2], bbox_y1=row["bbox"][3],
                srid="EPSG:4326", level=(parent.level + 1) if parent else 0, tree_id=1,
            )
            session.add(region)
            have[region.code] = region
        session.flush()
        pending = [row for row in pending if row["code"] not in have]
    _number_tree(have)
    session.flush()


def _number_tree(regions: dict[str, Region]) -> None:
    children: dict[int | None, list[Region]] = {}
    for region in regions.values():
        children.setdefault(region.parent_id, []).append(region)
    counter = 0

    def walk(node: Region) -> None:
        nonlocal counter
        counter += 1
        node.lft = counter
        for child in sorted(children.get(node.id, []), key=lambda r: r.code):
            walk(child)
        counter += 1
        node.rght = counter

    for root in sorted(children.get(None, []), key=lambda r: r.code):
        walk(root)


# ---------------------------------------------------------------------------------------
# listing: categories, keywords, tkeywords, regions

Usage = Callable[[Principal, Settings], Select]


def _category_usage(principal: Principal, settings: Settings) -> Select:
    return select(Resource.category_id.label("ref_id"), Resource.id.label("resource_id")).where(
        Resource.category_id.is_not(None), perms.visible_to(principal, settings))


def _linked_usage(table: Table, column: str) -> Usage:
    def usage(principal: Principal, settings: Settings) -> Select:
        return (
            select(table.c[column].label("ref_id"), table.c.resource_id.label("resource_id"))
            .join(Resource, Resource.id == table.c.resource_id)
            .where(perms.visible_to(principal, settings))
        )
    return usage


def _id_field(column) -> Field:
    return Field(column, kind=int, nullable=False)


def _thesaurus_field(column) -> Field:
    return Field(
        column,
        via=lambda cond: ThesaurusKeyword.thesaurus_id.in_(select(Thesaurus.id).where(cond)),
        sort=select(column).where(Thesaurus.id == ThesaurusKeyword.thesaurus_id)
        .correlate(ThesaurusKeyword).scalar_subquery(),
    )


CATEGORY_FIELDS = FieldMap(
    fields={
        "id": _id_field(Category.id), "pk": _id_field(Category.id),
        "identifier": Field(Category.identifier, nullable=False),
        "description": Field(Category.description), "gn_description": Field(Category.gn_description),
        "is_choice": Field(Category.is_choice, kind=bool, nullable=False),
        "fa_class": Field(Category.fa_class),
    },
    search_fields={"identifier": Category.identifier, "description": Category.description,
                   "gn_description": Category.gn_description},
    default_search_fields=("identifier", "gn_description"),
    default_sort=(Category.identifier.asc(),),
    tiebreak=Category.id,
)

KEYWORD_FIELDS = FieldMap(
    fields={
        "id": _id_field(Keyword.id), "pk": _id_field(Keyword.id),
        "name": Field(Keyword.name, nullable=False), "slug": Field(Keyword.slug, nullable=False),
        "path": Field(Keyword.path), "depth": Field(Keyword.depth, kind=int),
        "numchild": Field(Keyword.numchild, kind=int), "parent": Field(Keyword.parent_id, kind=int),
    },
    search_fields={"name": Keyword.name, "slug": Keyword.slug},
    default_search_fields=("name",),
    default_sort=(Keyword.name.asc(),),
    tiebreak=Keyword.id,
)

TKEYWORD_FIELDS = FieldMap(
    fields={
        "id": _id_field(ThesaurusKeyword.id), "pk": _id_field(ThesaurusKeyword.id),
        "name": Field(ThesaurusKeyword.alt_label, nullable=False),
        "alt_label": Field(ThesaurusKeyword.alt_label, nullable=False),
        "uri": Field(ThesaurusKeyword.about), "about": Field(ThesaurusKeyword.about),
        "thesaurus": _id_field(ThesaurusKeyword.thesaurus_id),
        "thesaurus.id": _id_field(ThesaurusKeyword.thesaurus_id),
        "thesaurus.slug": _thesaurus_field(Thesaurus.identifier),
        "thesaurus.identifier": _thesaurus_field(Thesaurus.identifier),
        "thesaurus.name": _thesaurus_field(Thesaurus.title),
        "thesaurus.uri": _thesaurus_field(Thesaurus.about),
    },
    search_fields={"name": ThesaurusKeyword.alt_label, "uri": ThesaurusKeyword.about},
    default_search_fields=("name",),
    default_sort=(ThesaurusKeyword.alt_label.asc(),),
    tiebreak=ThesaurusKeyword.id,
)

REGION_FIELDS = FieldMap(
    fields={
        "id": _id_field(Region.id), "pk": _id_field(Region.id),
        "code": Field(Region.code, nullable=False), "name": Field(Region.name, nullable=False),
        "parent": Field(Region.parent_id, kind=int), "parent.id": Field(Region.parent_id, kind=int),
        "level": Field(Region.level, kind=int, nullable=False),
        "lft": Field(Region.lft, kind=int, nullable=False),
        "rght": Field(Region.rght, kind=int, nullable=False),
        "tree_id": Field(Region.tree_id, kind=int, nullable=False),
        "srid": Field(Region.srid, nullable=False),
        **{n: Field(getattr(Region, n), kind=float) for n in ("bbox_x0", "bbox_x1", "bbox_y0", "bbox_y1")},
    },
    search_fields={"name": Region.name, "code": Region.code},
    default_search_fields=("name", "code"),
    # Tree order (nested-set), as GeoNode's MPTT manager lists regions.
    default_sort=(Region.tree_id.asc(), Region.lft.asc()),
    tiebreak=Region.id,
)


@dataclass(frozen=True)
class ReferenceCollection:
    """A public reference list: its model, query names and how resources use its items."""

    name: str
    model: Any
    fields: FieldMap
    usage: Usage
    with_resources: bool = False  # accepts ``with_resources=true|false``
    only_used: bool = False  # lists only items used by a visible resource (keywords)
    options: tuple = ()


CATEGORIES = ReferenceCollection("categories", Category, CATEGORY_FIELDS, _category_usage,
                                 with_resources=True)
KEYWORDS = ReferenceCollection("keywords", Keyword, KEYWORD_FIELDS,
                               _linked_usage(resource_keywords, "keyword_id"), only_used=True)
TKEYWORDS = ReferenceCollection(
    "tkeywords", ThesaurusKeyword, TKEYWORD_FIELDS, _linked_usage(resource_tkeywords, "tkeyword_id"),
    options=(joinedload(ThesaurusKeyword.thesaurus), selectinload(ThesaurusKeyword.labels)),
)
REGIONS = ReferenceCollection("regions", Region, REGION_FIELDS,
                              _linked_usage(resource_regions, "region_id"), with_resources=True)
COLLECTIONS = {c.name: c for c in (CATEGORIES, KEYWORDS, TKEYWORDS, REGIONS)}


@dataclass
class ReferencePage:
    rows: Sequence[Any]
    total: int
    page: int
    page_size: int | None
    counts: dict[int, int] = field(default_factory=dict)


def with_resources(params: dict[str, list[str]] | Any) -> bool | None:
    """``with_resources`` in any case; GeoNode reads a Python literal and crashes on ``true``."""
    raw = (params.get("with_resources") or [None])[0]
    if raw is None:
        return None
    word = raw.strip().lower()
    if word not in ("true", "false"):
        raise InvalidQuery(f"Invalid value for with_resources: {raw} (expected true or false)",
                           extra=["parameter: with_resources"])
    return word == "true"


def _used(collection: ReferenceCollection, principal: Principal, settings: Settings
          ) -> ColumnElement[bool]:
    usage = collection.usage(principal, settings).subquery()
    return collection.model.id.in_(select(usage.c.ref_id))


def reference_scope(ctx: ListContext, collection: ReferenceCollection) -> list[ColumnElement[bool]]:
    """A reference list narrowed to the items visible resources use, when asked or always."""
    clauses: list[ColumnElement[bool]] = []
    only_used = collection.only_used
    if collection.with_resources and with_resources(ctx.params):
        only_used = True
    if only_used:
        clauses.append(_used(collection, ctx.principal, ctx.settings))
    return clauses


def usage_counts(session: Session, principal: Principal, settings: Settings,
                 collection: ReferenceCollection, ids: Sequence[int]) -> dict[int, int]:
    """Visible resources per item of one page: one grouped statement."""
    if not ids:
        return {}
    usage = collection.usage(principal, settings).subquery()
    rows = session.execute(
        select(usage.c.ref_id, func.count()).where(usage.c.ref_id.in_(list(ids)))
        .group_by(usage.c.ref_id)
    )
    return {ref_id: count for ref_id, count in rows}


def list_reference(ctx: ListContext, collection: ReferenceCollection) -> ReferencePage:
    listing = query.page(ctx.session, select(collection.model), ctx.query, collection.fields,
                         where=reference_scope(ctx, collection), load=collection.options)
    counts = usage_counts(ctx.session, ctx.principal, ctx.settings, collection,
                          [r.id for r in listing.rows])
    return ReferencePage(listing.rows, listing.total or 0, listing.page, listing.page_size, counts)


def get_reference(session: Session, principal: Principal, settings: Settings,
                  collection: ReferenceCollection, raw_id: str) -> ReferencePage:
    """One item; keywords no visible resource uses are hidden here too, as in lists."""
    item_id = parse_id(raw_id)
    stmt = select(collection.model).where(collection.model.id == item_id)
    if collection.only_used:
        stmt = stmt.where(_used(collection, principal, settings))
    row = session.scalars(stmt.options(*collection.options)).unique().first()
    if row is None:
        raise NotFound()
    counts = usage_counts(session, principal, settings, collection, [row.id])
    return ReferencePage([row], 1, 1, 1, counts)
