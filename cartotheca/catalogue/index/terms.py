"""cartotheca.catalogue.index.terms: which ``filter{...}`` terms the index answers, as sets.

A term on an indexed fact (type, subtype, owner, group, category, keyword, region, thesaurus
keyword, the published/approved/advertised/featured flags, ids) with ``eq`` or ``in``, negated
or not, is a union of bitmaps; a name reached through a small reference table
(``keywords.slug``, ``category.identifier`` ...) is first resolved to ids there. Every other
term stays SQL: the list asks the database for the ids it matches and intersects them.

The values are converted exactly as ``compile_term`` converts them, which has already
validated them (a malformed value was a 400 before the index is asked).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyroaring import BitMap
from sqlalchemy import literal, select, union_all
from sqlalchemy.orm import Session

from cartotheca.catalogue.index.bitmaps import Bitmaps
from cartotheca.catalogue.query import FieldMap, FilterTerm, convert
from cartotheca.catalogue.query.resource_list import RESOURCE_FIELDS
from cartotheca.db.models import Category, Group, Keyword, Region, ThesaurusKeyword, User

DIRECT = {
    "resource_type": "type", "subtype": "subtype",
    "owner": "owner", "owner.pk": "owner", "owner.id": "owner",
    "group": "group", "group.pk": "group", "group.id": "group",
    "category": "category", "category.id": "category",
    "keywords": "keyword", "keywords.id": "keyword",
    "regions": "region", "regions.id": "region",
    "tkeywords": "tkeyword", "tkeywords.id": "tkeyword",
}
STATES = {"featured": "featured", "is_published": "published", "is_approved": "approved",
          "advertised": "advertised"}
IDS = ("id", "pk")
# name -> (reference table id, the column the name compares, family of the ids)
RESOLVED: dict[str, tuple[Any, Any, str]] = {
    "category.identifier": (Category.id, Category.identifier, "category"),
    "keywords.slug": (Keyword.id, Keyword.slug, "keyword"),
    "keywords.name": (Keyword.id, Keyword.name, "keyword"),
    "regions.code": (Region.id, Region.code, "region"),
    "regions.name": (Region.id, Region.name, "region"),
    "tkeywords.name": (ThesaurusKeyword.id, ThesaurusKeyword.alt_label, "tkeyword"),
    "tkeywords.uri": (ThesaurusKeyword.id, ThesaurusKeyword.about, "tkeyword"),
    "owner.username": (User.id, User.username, "owner"),
    "group.name": (Group.id, Group.name, "group"),
}
ROARING_MAX = 2**32


def indexed(term: FilterTerm, fields: FieldMap) -> bool:
    """Whether the index answers ``term`` (same field as the resource list's, eq or in)."""
    if term.op not in ("eq", "in"):
        return False
    known = term.path in DIRECT or term.path in STATES or term.path in IDS or term.path in RESOLVED
    return known and fields.fields.get(term.path) is RESOURCE_FIELDS.fields.get(term.path)


def _values(term: FilterTerm, kind: type) -> list[Any]:
    """The compared values, as ``compile_term`` reads them."""
    if term.op == "in":
        raw = [v for item in term.values for v in (item.split(",") if kind is int else [item])]
        return [convert(v, kind, term.param) for v in raw if v != "" or kind is str]
    return [convert(term.values[0], kind, term.param)]


def resolve(session: Session, terms: Sequence[FilterTerm]) -> list[list[Any]]:
    """Each term's values; for names compared on a reference table, the ids they match there,
    all found in one small statement (made before the index is locked)."""
    values = [_values(t, RESOURCE_FIELDS.fields[t.path].kind) for t in terms]
    lookups = [select(literal(i).label("term"), RESOLVED[t.path][0].label("id"))
               .where(RESOLVED[t.path][1].in_(values[i]))
               for i, t in enumerate(terms) if t.path in RESOLVED and values[i]]
    if not lookups:
        return [[] if t.path in RESOLVED else v for t, v in zip(terms, values, strict=True)]
    found: dict[int, list[Any]] = {}
    for i, resolved_id in session.execute(union_all(*lookups) if len(lookups) > 1 else lookups[0]):
        found.setdefault(i, []).append(resolved_id)
    return [found.get(i, []) if t.path in RESOLVED else values[i] for i, t in enumerate(terms)]


def term_set(b: Bitmaps, term: FilterTerm, values: list[Any]) -> BitMap:
    """The resources ``term`` keeps, given its ``resolve``d values."""
    if term.path in STATES:
        flag = b.state[STATES[term.path]]
        kept = BitMap()
        if True in values:
            kept |= flag
        if False in values:
            kept |= b.all - flag
    elif term.path in IDS:
        kept = BitMap([v for v in values if 0 <= v < ROARING_MAX]) & b.all
    elif term.path in DIRECT:
        kept = b.union(DIRECT[term.path], values)
    else:
        kept = b.union(RESOLVED[term.path][2], values)
    return b.all - kept if term.negated else kept


def split_terms(terms: Sequence[FilterTerm], fields: FieldMap
                ) -> tuple[list[FilterTerm], list[FilterTerm]]:
    """(terms the index answers, terms left to SQL)."""
    mine = [t for t in terms if indexed(t, fields)]
    return mine, [t for t in terms if not indexed(t, fields)]
