"""cartotheca.catalogue.reference: categories, keywords, thesauri, regions, licenses and their seeds."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from cartotheca.db.models import (
    Category,
    Keyword,
    License,
    Region,
    RestrictionCodeType,
    SpatialRepresentationType,
)

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
    """Regions form a tree (global → continents → countries) with nested-set columns."""
    have = {r.code: r for r in session.scalars(select(Region))}
    for row in rows:
        if row["code"] in have:
            continue
        parent = have.get(row.get("parent") or "")
        region = Region(
            code=row["code"], name=row["name"], parent_id=parent.id if parent else None,
            bbox_x0=row["bbox"][0], bbox_y0=row["bbox"][1],
            bbox_x1=row["bbox"][2], bbox_y1=row["bbox"][3],
            srid="EPSG:4326", level=(parent.level + 1) if parent else 0, tree_id=1,
        )
        session.add(region)
        session.flush()
        have[region.code] = region
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
