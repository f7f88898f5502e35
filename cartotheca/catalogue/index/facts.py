"""cartotheca.catalogue.index.facts: reading resources' indexed facts from the database.

``read_facts`` re-reads a handful of changed resources (five statements per batch of ids);
``stream_facts`` feeds a full build table by table in batches, so memory stays bounded by the
batch size, not by the catalogue.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from sqlalchemy import Connection, select

from cartotheca.catalogue.index.bitmaps import Bitmaps, Facts
from cartotheca.catalogue.permissions import VIEW
from cartotheca.db.models import (
    Resource,
    ResourcePermission,
    resource_keywords,
    resource_regions,
    resource_tkeywords,
)

BATCH = 5000
RESOURCE_COLUMNS = (Resource.id, Resource.owner_id, Resource.group_id, Resource.is_published,
                    Resource.is_approved, Resource.advertised, Resource.featured,
                    Resource.resource_type, Resource.subtype, Resource.category_id)
LINKS = (("keyword", resource_keywords.c.resource_id, resource_keywords.c.keyword_id),
         ("region", resource_regions.c.resource_id, resource_regions.c.region_id),
         ("tkeyword", resource_tkeywords.c.resource_id, resource_tkeywords.c.tkeyword_id))


def _facts(row: Any) -> Facts:
    return Facts(owner=row.owner_id, group=row.group_id, published=bool(row.is_published),
                 approved=bool(row.is_approved), advertised=bool(row.advertised),
                 featured=bool(row.featured), type=row.resource_type, subtype=row.subtype,
                 category=row.category_id)


def _grants():
    return select(ResourcePermission.resource_id, ResourcePermission.user_id,
                  ResourcePermission.group_id).where(ResourcePermission.codename == VIEW)


def read_facts(conn: Connection, resource_ids: Sequence[int]) -> dict[int, Facts]:
    """The facts of the resources that exist among ``resource_ids``."""
    out: dict[int, Facts] = {}
    for start in range(0, len(resource_ids), BATCH):
        ids = list(resource_ids[start:start + BATCH])
        rows = conn.execute(select(*RESOURCE_COLUMNS).where(Resource.id.in_(ids)))
        batch = {row.id: _facts(row) for row in rows}
        for rid, user_id, group_id in conn.execute(_grants().where(ResourcePermission.resource_id.in_(ids))):
            if rid in batch:
                (batch[rid].grant_user if user_id is not None else batch[rid].grant_group).add(
                    user_id if user_id is not None else group_id)
        for family, ref, value in LINKS:
            for rid, key in conn.execute(select(ref, value).where(ref.in_(ids))):
                if rid in batch:
                    getattr(batch[rid], family).add(key)
        out.update(batch)
    return out


def _batches(conn: Connection, stmt) -> Iterator[Sequence[Any]]:
    result = conn.execution_options(stream_results=True, yield_per=BATCH).execute(stmt)
    yield from result.partitions(BATCH)


def stream_facts(conn: Connection, into: Bitmaps) -> None:
    """Fill ``into`` with every resource's facts, reading each table once in batches."""
    for rows in _batches(conn, select(*RESOURCE_COLUMNS)):
        into.all.update(row.id for row in rows)
        groups: dict[tuple[str, Any], list[int]] = {}
        for row in rows:
            facts = _facts(row)
            for name, on in facts.states().items():
                if on:
                    groups.setdefault(("state", name), []).append(row.id)
            for family, keys in facts.values().items():
                for key in keys:
                    groups.setdefault((family, key), []).append(row.id)
        _add(into, groups)
    for rows in _batches(conn, _grants()):
        groups = {}
        for rid, user_id, group_id in rows:
            key = ("grant_user", user_id) if user_id is not None else ("grant_group", group_id)
            groups.setdefault(key, []).append(rid)
        _add(into, groups)
    for family, ref, value in LINKS:
        for rows in _batches(conn, select(ref, value)):
            groups = {}
            for rid, key in rows:
                groups.setdefault((family, key), []).append(rid)
            _add(into, groups)


def _add(into: Bitmaps, groups: dict[tuple[str, Any], list[int]]) -> None:
    for (family, key), ids in groups.items():
        if family == "state":
            into.state[key].update(ids)
        else:
            into.add_many(family, key, ids)
