"""cartotheca.catalogue.index.bitmaps: the catalogue's facts as compressed sets of resource ids.

One roaring bitmap per state (all, advertised, published, approved, featured) and one per value
of each family (owner, resource group, view grantee user and group, type, subtype, category,
keyword, region, thesaurus keyword). Setting a resource's facts is idempotent: the id leaves
every set, then joins the ones its facts name, so re-applying a change never double counts.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field

from pyroaring import BitMap

FAMILIES = ("owner", "group", "grant_user", "grant_group", "type", "subtype", "category",
            "keyword", "region", "tkeyword")
STATES = ("advertised", "published", "approved", "featured")


@dataclass
class Facts:
    """What the index holds of one resource (``None`` values join no set)."""

    owner: int
    group: int | None
    published: bool
    approved: bool
    advertised: bool
    featured: bool
    type: str
    subtype: str | None
    category: int | None
    grant_user: set[int] = field(default_factory=set)
    grant_group: set[int] = field(default_factory=set)
    keyword: set[int] = field(default_factory=set)
    region: set[int] = field(default_factory=set)
    tkeyword: set[int] = field(default_factory=set)

    def states(self) -> dict[str, bool]:
        return {"advertised": self.advertised, "published": self.published,
                "approved": self.approved, "featured": self.featured}

    def values(self) -> dict[str, Iterable[Hashable]]:
        """Each family's values for this resource."""
        single = {"owner": self.owner, "group": self.group, "type": self.type,
                  "subtype": self.subtype, "category": self.category}
        out: dict[str, Iterable[Hashable]] = {k: () if v is None else (v,) for k, v in single.items()}
        out.update(grant_user=self.grant_user, grant_group=self.grant_group, keyword=self.keyword,
                   region=self.region, tkeyword=self.tkeyword)
        return out


class Bitmaps:
    """The sets, and the few set operations the counts need."""

    def __init__(self) -> None:
        self.all = BitMap()
        self.state: dict[str, BitMap] = {name: BitMap() for name in STATES}
        self.by: dict[str, dict[Hashable, BitMap]] = {name: {} for name in FAMILIES}

    def member(self, family: str, key: Hashable) -> BitMap:
        """The set of one family value (empty when no resource has it)."""
        return self.by[family].get(key) or BitMap()

    def union(self, family: str, keys: Iterable[Hashable]) -> BitMap:
        found = [self.by[family][k] for k in keys if k in self.by[family]]
        return BitMap.union(*found) if found else BitMap()

    def set_resource(self, resource_id: int, facts: Facts | None) -> None:
        """Make the sets say ``facts`` of ``resource_id`` (None: the resource is gone)."""
        self.all.discard(resource_id)
        for bitmap in self.state.values():
            bitmap.discard(resource_id)
        for members in self.by.values():
            for bitmap in members.values():
                bitmap.discard(resource_id)
        if facts is None:
            return
        self.all.add(resource_id)
        for name, on in facts.states().items():
            if on:
                self.state[name].add(resource_id)
        for family, keys in facts.values().items():
            members = self.by[family]
            for key in keys:
                members.setdefault(key, BitMap()).add(resource_id)

    def add_many(self, family: str, key: Hashable, resource_ids: Iterable[int]) -> None:
        """Bulk add while building (ids of one value from a streamed batch)."""
        self.by[family].setdefault(key, BitMap()).update(resource_ids)

    def drop_empty(self) -> None:
        """Forget values no resource has any more (a deleted keyword, a former owner)."""
        for members in self.by.values():
            for key in [k for k, v in members.items() if not v]:
                del members[key]
