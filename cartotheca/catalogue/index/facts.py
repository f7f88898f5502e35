"""cartotheca.catalogue.index.facts: reading resources' indexed facts from the database.

``read_facts`` re-reads a handful of changed resources (five statements per batch of ids);
``stream_facts`` feeds a full build table by table in batches, so memory stays bounded by the
batch size, not by the catalogue.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import compress
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
# The columns of a full build, in ``Facts``' states and single values.
STATE_COLUMNS = {"advertised": Resource.advertised, "published": Resource.is_published,
                 "approved": Resource.is_approved, "featured": Resource.featured}
VALUE_COLUMNS = {"owner": Resource.owner_id, "group": Resource.group_id, "type": Resource.resource_type,
                 "subtype": Resource.subtype, "category": Resource.category_id}
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
    """Fill ``into`` with every resource's facts, reading each table once in batches.

    Column by column rather than row by row: a batch is split into its columns once and each
    column is grouped by value in a tight loop, with no per-resource ``Facts`` (building those
    made a full build of 1,000,000 resources take ~26 s). The sets are the ones ``Facts`` and
    ``Bitmaps.set_resource`` give: a true state joins its set, a value other than None its own.
    """
    for rows in _batches(conn, select(Resource.id, *STATE_COLUMNS.values(), *VALUE_COLUMNS.values())):
        ids, *columns = zip(*rows, strict=True)
        into.all.update(ids)
        for name, flags in zip(STATE_COLUMNS, columns, strict=False):
            into.state[name].update(compress(ids, flags))
        for family, keys in zip(VALUE_COLUMNS, columns[len(STATE_COLUMNS):], strict=True):
            _add(into, family, _grouped(zip(ids, keys, strict=True)))
    grants = ({}, {})  # by user, by group
    for rows in _batches(conn, _grants()):
        for rid, user_id, group_id in rows:
            if user_id is not None:
                grants[0].setdefault(user_id, []).append(rid)
            else:
                grants[1].setdefault(group_id, []).append(rid)
        for family, groups in zip(("grant_user", "grant_group"), grants, strict=True):
            _add(into, family, groups)
            groups.clear()
    for family, ref, value in LINKS:
        for rows in _batches(conn, select(ref, value)):
            _add(into, family, _grouped(rows))


def _grouped(pairs: Iterable[tuple[int, Any]]) -> dict[Any, list[int]]:
    """Resource ids by value, None left out."""
    groups: dict[Any, list[int]] = {}
    for rid, key in pairs:
        if key is not None:
            groups.setdefault(key, []).append(rid)
    return groups


def _add(into: Bitmaps, family: str, groups: dict[Any, list[int]]) -> None:
    for key, ids in groups.items():
        into.add_many(family, key, ids)
