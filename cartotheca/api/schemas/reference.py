"""cartotheca.api.schemas.reference: categories, keywords, tkeywords and regions on the wire.

These collections identify items by ``id`` (not ``pk``) and their detail key is the plural
name (GeoNode's serializers are named in the plural). Region bounding boxes are decimal
strings with fifteen decimals, the text GeoNode's DecimalField gives for a double.
"""

from __future__ import annotations

from typing import Any

from cartotheca.api.schemas.resources import _tkeyword
from cartotheca.catalogue.reference import ReferencePage
from cartotheca.db.models import Category, Keyword, Region, ThesaurusKeyword


def decimal(value: float | None) -> str | None:
    return None if value is None else f"{value:.15f}"


def category_record(c: Category) -> dict[str, Any]:
    return {
        "id": c.id,
        "identifier": c.identifier,
        "description": c.description,
        "gn_description": c.gn_description,
        "is_choice": c.is_choice,
        "fa_class": c.fa_class,
        # GeoNode 4.4 adds per-language copies (django-modeltranslation); English only here.
        "description_en": c.description,
        "gn_description_en": c.gn_description,
    }


def keyword_record(k: Keyword) -> dict[str, Any]:
    return {"id": k.id, "name": k.name, "slug": k.slug, "path": k.path, "depth": k.depth,
            "numchild": k.numchild}


def tkeyword_record(t: ThesaurusKeyword) -> dict[str, Any]:
    # GeoNode shows no id here; it is added so the detail route can be reached from a list.
    return {"id": t.id, **_tkeyword(t)}


def region_record(r: Region) -> dict[str, Any]:
    return {
        "id": r.id,
        "code": r.code,
        "name": r.name,
        "name_en": r.name,
        "bbox_x0": decimal(r.bbox_x0),
        "bbox_x1": decimal(r.bbox_x1),
        "bbox_y0": decimal(r.bbox_y0),
        "bbox_y1": decimal(r.bbox_y1),
        "srid": r.srid,
        "lft": r.lft,
        "rght": r.rght,
        "tree_id": r.tree_id,
        "level": r.level,
        "parent": r.parent_id,
    }


SERIALISERS = {
    "categories": category_record,
    "keywords": keyword_record,
    "tkeywords": tkeyword_record,
    "regions": region_record,
}


def reference_records(name: str, page: ReferencePage, site: str) -> list[dict[str, Any]]:
    serialise = SERIALISERS[name]
    return [
        {**serialise(row), "link": f"{site}/api/v2/{name}/{row.id}", "count": page.counts.get(row.id, 0)}
        for row in page.rows
    ]
