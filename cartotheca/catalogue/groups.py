"""cartotheca.catalogue.groups: group profiles, their visibility, members and managers.

Only groups with a profile exist for the API; the internal anonymous and registered-members
groups have none and so never appear.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ValidationInfo, field_validator, model_validator
from pydantic import Field as ModelField
from sqlalchemy import ColumnElement, delete, or_, select
from sqlalchemy.orm import Session, contains_eager

from cartotheca.catalogue import query
from cartotheca.catalogue.auth import Principal
from cartotheca.catalogue.inputs import invalid
from cartotheca.catalogue.query import Field, FieldMap, ListContext, Listing
from cartotheca.catalogue.reference import slugify
from cartotheca.catalogue.resources import parse_id
from cartotheca.db.models import Group, GroupMember, GroupProfile, User
from cartotheca.errors import InvalidInput, NotAuthenticated, NotFound, PermissionDenied

ACCESS = ("public", "public-invite", "private")
OPEN_ACCESS = ("public", "public-invite")


def _fields() -> dict[str, Field]:
    out = {n: Field(getattr(GroupProfile, n)) for n in
           ("title", "slug", "description", "email", "access", "logo")}
    out["pk"] = out["id"] = Field(GroupProfile.id, kind=int, nullable=False)
    out["group"] = out["group.pk"] = out["group.id"] = Field(GroupProfile.group_id, kind=int,
                                                             nullable=False)
    out["group.name"] = Field(Group.name, nullable=False)
    out["created"] = Field(GroupProfile.created, kind=dt.datetime)
    out["last_modified"] = Field(GroupProfile.last_modified, kind=dt.datetime)
    return out


GROUP_FIELDS = FieldMap(
    fields=_fields(),
    search_fields={"title": GroupProfile.title, "slug": GroupProfile.slug,
                   "description": GroupProfile.description},
    default_search_fields=("title", "slug", "description"),
    default_sort=(GroupProfile.title.asc(),),
    tiebreak=GroupProfile.id,
)


def visible_groups(principal: Principal) -> ColumnElement[bool] | None:
    """Public and public-invite groups, plus private ones the requester belongs to."""
    if principal.is_staff:
        return None
    options = [GroupProfile.access.in_(OPEN_ACCESS)]
    if principal.member_group_ids:
        options.append(GroupProfile.group_id.in_(sorted(principal.member_group_ids)))
    return or_(*options)


def _base(principal: Principal):
    stmt = select(GroupProfile).join(GroupProfile.group).options(contains_eager(GroupProfile.group))
    visible = visible_groups(principal)
    return stmt.where(visible) if visible is not None else stmt


def list_groups(ctx: ListContext) -> Listing:
    return query.page(ctx.session, _base(ctx.principal), ctx.query, GROUP_FIELDS)


def get_group(session: Session, principal: Principal, raw_id: Any) -> GroupProfile:
    profile = session.scalars(_base(principal).where(GroupProfile.id == parse_id(raw_id))).first()
    if profile is None:
        raise NotFound()
    return profile


def profiles_by_ids(session: Session, ids: Sequence[int]) -> list[GroupProfile]:
    stmt = select(GroupProfile).join(GroupProfile.group).options(contains_eager(GroupProfile.group))
    found = {p.id: p for p in session.scalars(stmt.where(GroupProfile.id.in_(ids)))}
    missing = [i for i in ids if i not in found]
    if missing:
        raise NotFound(f"Not found: {missing[0]}")
    return [found[i] for i in ids]


# ---------------------------------------------------------------------------------------
# writes

class GroupFields(BaseModel):
    """The writable fields of a group profile, stripped and checked; keys it does not know are
    ignored, as clients send whole profiles back. Parsed with ``context={"new": True}`` for a
    new group, which needs a title."""

    title: str | None = ModelField(default=None, validate_default=True)
    slug: str | None = None
    description: str | None = None
    email: str | None = None
    logo: str | None = None
    access: str | None = None
    keywords: list[str] | None = None
    categories: list[str] | None = None

    @model_validator(mode="before")
    @classmethod
    def _object(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            raise invalid("Invalid data. Expected a dictionary.")
        return data

    @field_validator("title", mode="plain")
    @classmethod
    def _title(cls, value: Any, info: ValidationInfo) -> str | None:
        title = _text(value, "title", 255)
        if info.context and info.context.get("new"):
            if not title:
                raise invalid("title: this field is required.")
        elif title is not None and not title:
            raise invalid("title: this field may not be blank.")
        return title

    @field_validator("slug", "description", "email", "logo", mode="plain")
    @classmethod
    def _texts(cls, value: Any, info: ValidationInfo) -> str | None:
        return _text(value, str(info.field_name), TEXT_LIMITS[str(info.field_name)])

    @field_validator("access", mode="plain")
    @classmethod
    def _access(cls, value: Any) -> str | None:
        if value is not None and value not in ACCESS:
            raise invalid(f'access: "{value}" is not a valid choice.')
        return value

    @field_validator("keywords", "categories", mode="plain")
    @classmethod
    def _slugs(cls, value: Any, info: ValidationInfo) -> list[str] | None:
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise invalid(f"{info.field_name}: expected a list of names.")
        return list(dict.fromkeys(slugify(v) for v in value))


TEXT_LIMITS = {"slug": 255, "description": None, "email": 254, "logo": 1024}


def _text(value: Any, key: str, limit: int | None) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or "\x00" in value or (limit and len(value) > limit):
        raise invalid(f"{key}: enter a valid value.")
    return value.strip()


def _apply(session: Session, profile: GroupProfile, fields: GroupFields) -> None:
    if fields.title is not None:
        profile.title = fields.title
    slug = slugify(fields.slug) if fields.slug else None
    if slug is not None and slug != profile.slug:
        taken = select(GroupProfile.id).where(GroupProfile.slug == slug)
        if profile.id is not None:
            taken = taken.where(GroupProfile.id != profile.id)
        if session.scalar(taken) is not None:
            raise InvalidInput("group profile with this slug already exists.")
        profile.slug = slug
    for key in ("description", "email", "logo"):
        if key in fields.model_fields_set:
            setattr(profile, key, getattr(fields, key) or ("" if key == "description" else None))
    if fields.access is not None:
        profile.access = fields.access
    for key in ("keywords", "categories"):
        values = getattr(fields, key)
        if values is not None:
            setattr(profile, key, values)


def may_create(principal: Principal) -> None:
    """Groups are made by staff (GeoNode)."""
    _require_staff(principal)


def create_group(session: Session, principal: Principal, fields: GroupFields) -> GroupProfile:
    """A group and its profile; the group's name is the profile's slug (staff only)."""
    may_create(principal)
    title = fields.title or ""
    slug = slugify(fields.slug or title)
    if session.scalar(select(Group.id).where(Group.name == slug)) is not None:
        raise InvalidInput("group profile with this slug already exists.")
    # Built together so no relationship is lazily loaded while linking them.
    profile = GroupProfile(title=title, slug="", description="", access="public",
                           keywords=[], categories=[], group=Group(name=slug, internal=False))
    _apply(session, profile, fields.model_copy(update={"title": title, "slug": slug}))
    session.add(profile)
    session.flush()
    return profile


def may_update(principal: Principal, profile: GroupProfile, *, managers_may: bool) -> None:
    """PUT is for staff; PATCH for staff or a manager of this group."""
    if principal.id is None:
        raise NotAuthenticated()
    manager = profile.group_id in principal.managed_group_ids
    if not (principal.is_staff or (managers_may and manager)):
        raise PermissionDenied()


def update_group(session: Session, principal: Principal, profile: GroupProfile,
                 fields: GroupFields, *, managers_may: bool) -> GroupProfile:
    may_update(principal, profile, managers_may=managers_may)
    _apply(session, profile, fields)
    session.flush()
    return profile


def delete_groups(session: Session, principal: Principal, profiles: Sequence[GroupProfile]) -> None:
    """Deleting the group removes its profile, memberships and grants (database cascades)."""
    _require_staff(principal)
    ids = [p.group_id for p in profiles]
    for profile in profiles:
        session.expunge(profile)
    session.execute(delete(Group).where(Group.id.in_(ids)).execution_options(
        synchronize_session=False))


def _require_staff(principal: Principal) -> None:
    if principal.id is None:
        raise NotAuthenticated()
    if not principal.is_staff:
        raise PermissionDenied()


def group_users(session: Session, principal: Principal, profile: GroupProfile,
                *, managers_only: bool) -> list[User]:
    """Members (managers included) or managers. Shown to staff and the group's managers only:
    the user objects carry e-mail addresses."""
    if principal.id is None:
        raise NotAuthenticated()
    if not principal.is_staff and profile.group_id not in principal.managed_group_ids:
        raise PermissionDenied()
    stmt = (select(User).join(GroupMember, GroupMember.user_id == User.id)
            .where(GroupMember.group_id == profile.group_id).order_by(User.username, User.id))
    if managers_only:
        stmt = stmt.where(GroupMember.role == "manager")
    return list(session.scalars(stmt))
