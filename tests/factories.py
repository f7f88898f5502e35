"""Test data built through the domain code and the ORM; never mocks of our own code."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from cartotheca.catalogue import permissions as perms
from cartotheca.catalogue import reference
from cartotheca.catalogue.accounts import create_user, internal_group_ids
from cartotheca.catalogue.resource_writer import set_extent
from cartotheca.db.models import (
    Category,
    ContactRole,
    Group,
    GroupMember,
    GroupProfile,
    Region,
    Resource,
    User,
)
from cartotheca.settings import Settings

_seq = itertools.count(1)
PASSWORD = "secret-pass-1"


def make_user(db: Session, username: str | None = None, *, password: str = PASSWORD,
              **fields) -> User:
    user = create_user(db, username=username or f"user{next(_seq)}", password=password, **fields)
    db.commit()
    return user


def make_group(db: Session, title: str, *, members: Sequence[User] = (),
               managers: Sequence[User] = (), access: str = "public") -> Group:
    slug = reference.slugify(title)
    group = Group(name=slug)
    db.add(group)
    db.flush()
    db.add(GroupProfile(group_id=group.id, title=title, slug=slug, access=access,
                        description=f"{title} group"))
    for user in members:
        db.add(GroupMember(group_id=group.id, user_id=user.id, role="member"))
    for user in managers:
        db.add(GroupMember(group_id=group.id, user_id=user.id, role="manager"))
    db.commit()
    return group


def make_resource(db: Session, settings: Settings, owner: User, title: str | None = None, *,
                  resource_type: str = "dataset", public: bool = True,
                  keywords: Sequence[str] = (), regions: Sequence[str] = (),
                  category: str | None = None, extent: tuple | None = None,
                  shared_with_group: Group | None = None, shared_with_user: User | None = None,
                  group: Group | None = None, **fields) -> Resource:
    resource = Resource(
        resource_type=resource_type, title=title or f"resource {next(_seq)}", owner_id=owner.id,
        abstract=fields.pop("abstract", ""), **fields,
    )
    resource.keywords = reference.keywords_by_name(db, list(keywords))
    if regions:
        resource.regions = list(db.scalars(select(Region).where(Region.code.in_(regions))))
    if category:
        resource.category_id = db.scalar(select(Category.id).where(Category.identifier == category))
    if extent:
        set_extent(resource, extent, "EPSG:4326", extent)
    if group is not None:
        resource.group_id = group.id
    resource.contacts = [ContactRole(role="poc", user_id=owner.id)]
    db.add(resource)
    db.flush()
    anonymous_id, _ = internal_group_ids(db, settings)
    if public:
        perms.grant(db, resource.id, "download", group_id=anonymous_id)
    if shared_with_group is not None:
        perms.grant(db, resource.id, "view", group_id=shared_with_group.id)
    if shared_with_user is not None:
        perms.grant(db, resource.id, "view", user_id=shared_with_user.id)
    db.commit()
    return resource
