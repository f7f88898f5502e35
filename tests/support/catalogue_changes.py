"""Random catalogue changes and the requests whose counts the catalogue index must get right.

Shared by the index's property tests (in process and against server processes): a small cast
of users and groups, a seeded random walk of writes (permissions, publishing, approval,
featured, keywords, regions, category, owner, group, type, deletes, creates), and the request
parameters each comparison runs.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from cartotheca.catalogue import permissions as perms
from cartotheca.catalogue import reference
from cartotheca.db.models import (
    Category,
    Group,
    Region,
    Resource,
    ResourcePermission,
    Thesaurus,
    ThesaurusKeyword,
    User,
    resource_keywords,
    resource_regions,
    resource_tkeywords,
)
from tests.factories import make_group, make_resource, make_user

KEYWORDS = ("rivers", "roads", "soil", "birds", "rain")
REGIONS = ("GLO", "AFR", "EUR", "ITA")
CATEGORIES = ("biota", "farming", "oceans", "elevation")
TYPES = (("dataset", "vector"), ("dataset", "raster"), ("map", None), ("document", None),
         ("geoapp", ""))
# List requests compared for every requester: nothing, the advertised switch, and filters the
# index answers (types, names resolved to ids, flags, negations) or leaves to SQL (text).
LIST_QUERIES: tuple[tuple[tuple[str, str], ...], ...] = (
    (),
    (("advertised", "false"),),
    (("advertised", "all"),),
    (("advertised", "true"),),
    (("filter{resource_type.in}", "dataset"), ("filter{resource_type.in}", "map")),
    (("filter{subtype}", "vector"),),
    (("filter{keywords.slug.in}", "rivers"), ("filter{keywords.slug.in}", "soil")),
    (("filter{category.identifier}", "biota"),),
    (("filter{regions.code.in}", "EUR"),),
    (("filter{featured}", "true"),),
    (("filter{-featured}", "true"),),
    (("filter{is_published}", "false"),),
    (("filter{-keywords.slug}", "roads"),),
    (("search", "r"),),
    (("filter{title.icontains}", "1"), ("filter{featured}", "false")),
)
FACET_QUERIES: tuple[tuple[tuple[str, str], ...], ...] = (
    (),
    (("filter{resource_type.in}", "dataset"),),
    (("filter{-featured}", "true"), ("advertised", "false")),
)


@dataclass
class Cast:
    """Who acts and who asks: owners, a group member, a group manager, a bystander."""

    users: list[User]
    groups: list[Group]
    thesaurus: Thesaurus
    member: User
    resources: list[int] = field(default_factory=list)


def make_cast(db: Session, settings) -> Cast:
    owners = [make_user(db, f"own{i}") for i in range(3)]
    member = make_user(db, "member")
    manager = make_user(db, "manager")
    bystander = make_user(db, "bystander")
    team = make_group(db, "Team", members=[member, owners[1]], managers=[manager])
    other = make_group(db, "Other", members=[bystander])
    thesaurus = Thesaurus(identifier="themes", title="Themes")
    db.add(thesaurus)
    db.flush()
    db.add_all([ThesaurusKeyword(alt_label=f"t{i}", thesaurus_id=thesaurus.id) for i in range(3)])
    db.commit()
    cast = Cast([*owners, member, manager, bystander], [team, other], thesaurus, member)
    for _ in range(6):
        create(db, settings, cast, random.Random(len(cast.resources)))
    return cast


def create(db: Session, settings, cast: Cast, rnd: random.Random) -> None:
    rtype, subtype = rnd.choice(TYPES)
    resource = make_resource(
        db, settings, rnd.choice(cast.users[:3]), f"r{len(cast.resources)}", resource_type=rtype,
        subtype=subtype, public=rnd.random() < 0.6,
        keywords=rnd.sample(KEYWORDS, rnd.randint(0, 2)), regions=rnd.sample(REGIONS, rnd.randint(0, 2)),
        category=rnd.choice((None, *CATEGORIES)),
        shared_with_group=rnd.choice((None, *cast.groups)),
        shared_with_user=rnd.choice((None, cast.member)),
        group=rnd.choice((None, *cast.groups)), featured=rnd.random() < 0.3,
        is_published=rnd.random() < 0.7, is_approved=rnd.random() < 0.7, advertised=rnd.random() < 0.8,
    )
    cast.resources.append(resource.id)


def _flip(column):
    def change(db: Session, _settings, _cast: Cast, rid: int, rnd: random.Random) -> None:
        db.execute(update(Resource).where(Resource.id == rid).values({column: rnd.random() < 0.5}))
    return change


def _grant(db: Session, _settings, cast: Cast, rid: int, rnd: random.Random) -> None:
    if rnd.random() < 0.5:
        perms.grant(db, rid, "view", group_id=rnd.choice(cast.groups).id)
    else:
        perms.grant(db, rid, "view", user_id=rnd.choice(cast.users).id)


def _revoke(db: Session, _settings, _cast: Cast, rid: int, _rnd: random.Random) -> None:
    db.execute(delete(ResourcePermission).where(ResourcePermission.resource_id == rid))


def _links(table, column, model, key, values):
    def change(db: Session, _settings, _cast: Cast, rid: int, rnd: random.Random) -> None:
        db.execute(delete(table).where(table.c.resource_id == rid))
        ids = db.scalars(select(model.id).where(key.in_(rnd.sample(values, rnd.randint(0, 2))))).all()
        for target in ids:
            db.execute(table.insert().values({"resource_id": rid, column: target}))
    return change


def _keywords(db: Session, _settings, _cast: Cast, rid: int, rnd: random.Random) -> None:
    keywords = reference.keywords_by_name(db, rnd.sample(KEYWORDS, rnd.randint(0, 3)))
    db.execute(delete(resource_keywords).where(resource_keywords.c.resource_id == rid))
    for keyword in keywords:
        db.execute(resource_keywords.insert().values(resource_id=rid, keyword_id=keyword.id))


def _category(db: Session, _settings, _cast: Cast, rid: int, rnd: random.Random) -> None:
    category = db.scalar(select(Category.id).where(Category.identifier == rnd.choice(CATEGORIES)))
    db.execute(update(Resource).where(Resource.id == rid).values(
        category_id=None if rnd.random() < 0.3 else category))


def _owner(db: Session, _settings, cast: Cast, rid: int, rnd: random.Random) -> None:
    db.execute(update(Resource).where(Resource.id == rid).values(owner_id=rnd.choice(cast.users).id))


def _group(db: Session, _settings, cast: Cast, rid: int, rnd: random.Random) -> None:
    db.execute(update(Resource).where(Resource.id == rid).values(
        group_id=rnd.choice((None, *(g.id for g in cast.groups)))))


def _type(db: Session, _settings, _cast: Cast, rid: int, rnd: random.Random) -> None:
    rtype, subtype = rnd.choice(TYPES)
    db.execute(update(Resource).where(Resource.id == rid).values(resource_type=rtype, subtype=subtype))


def _delete(db: Session, _settings, cast: Cast, rid: int, _rnd: random.Random) -> None:
    db.execute(delete(Resource).where(Resource.id == rid))
    cast.resources.remove(rid)


CHANGES = {
    "publish": _flip("is_published"), "approve": _flip("is_approved"),
    "feature": _flip("featured"), "advertise": _flip("advertised"),
    "grant": _grant, "revoke": _revoke, "keywords": _keywords, "category": _category,
    "regions": _links(resource_regions, "region_id", Region, Region.code, REGIONS),
    "tkeywords": _links(resource_tkeywords, "tkeyword_id", ThesaurusKeyword, ThesaurusKeyword.alt_label,
                        ("t0", "t1", "t2")),
    "owner": _owner, "group": _group, "type": _type, "delete": _delete,
}


def random_change(db: Session, settings, cast: Cast, rnd: random.Random) -> str:
    """One random committed write; its name."""
    if not cast.resources or rnd.random() < 0.15:
        create(db, settings, cast, rnd)
        return "create"
    name = rnd.choice(sorted(CHANGES))
    CHANGES[name](db, settings, cast, rnd.choice(cast.resources), rnd)
    db.commit()
    return name
