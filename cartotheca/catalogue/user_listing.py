"""cartotheca.catalogue.user_listing: users as a requester may see them.

The user list and one user (administrators see every account, anyone else only their own),
a user's groups, and the owners list (public, counted over the resources the requester can
see). Creating, changing and deleting accounts is ``accounts``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session, contains_eager

from cartotheca.catalogue import permissions as perms
from cartotheca.catalogue import query
from cartotheca.catalogue.auth import Principal
from cartotheca.catalogue.query import Field, FieldMap, ListContext, Listing
from cartotheca.catalogue.resources import parse_id
from cartotheca.db.models import Group, GroupMember, GroupProfile, Resource, User
from cartotheca.errors import NotAuthenticated, NotFound


def _user_fields() -> dict[str, Field]:
    out = {n: Field(getattr(User, n)) for n in ("username", "email", "first_name", "last_name")}
    out["pk"] = out["id"] = Field(User.id, kind=int, nullable=False)
    for n in ("is_staff", "is_superuser", "is_active"):
        out[n] = Field(getattr(User, n), kind=bool, nullable=False)
    out["date_joined"] = Field(User.date_joined, kind=dt.datetime)
    out["last_login"] = Field(User.last_login, kind=dt.datetime)
    return out


USER_FIELDS = FieldMap(
    fields=_user_fields(),
    search_fields={n: getattr(User, n) for n in ("username", "first_name", "last_name", "email")},
    default_search_fields=("username", "first_name", "last_name", "email"),
    default_sort=(User.username.asc(),),
    tiebreak=User.id,
)

# Owners are public (anyone may list them), so e-mail addresses are neither shown nor
# filterable: a filter would let a caller probe who has which address.
OWNER_FIELDS = FieldMap(
    fields={k: v for k, v in USER_FIELDS.fields.items()
            if k in ("pk", "id", "username", "first_name", "last_name")},
    search_fields={n: getattr(User, n) for n in ("username", "first_name", "last_name")},
    default_search_fields=("username", "first_name", "last_name"),
    default_sort=(User.username.asc(),),
    tiebreak=User.id,
)


def _visible_users(principal: Principal):
    """Administrators see every account; anyone else only their own (spec §4.6, §5)."""
    if principal.is_staff:
        return None
    return User.id == principal.id


def list_users(ctx: ListContext) -> Listing:
    if ctx.principal.id is None:
        raise NotAuthenticated()
    own = _visible_users(ctx.principal)
    return query.page(ctx.session, select(User), ctx.query, USER_FIELDS,
                      where=[own] if own is not None else [])


def get_user(session: Session, principal: Principal, raw_id: Any) -> User:
    """A user the requester may see; others are 404, as if they did not exist."""
    if principal.id is None:
        raise NotAuthenticated()
    user = session.get(User, parse_id(raw_id))
    if user is None or (not principal.is_staff and user.id != principal.id):
        raise NotFound()
    return user


def user_groups(session: Session, user: User) -> list[GroupProfile]:
    """The profiled groups a user belongs to (as member or manager); internal groups never."""
    stmt = (
        select(GroupProfile).join(GroupProfile.group)
        .join(GroupMember, GroupMember.group_id == Group.id)
        .where(GroupMember.user_id == user.id)
        .options(contains_eager(GroupProfile.group))
        .order_by(GroupProfile.title, GroupProfile.id)
    )
    return list(session.scalars(stmt).unique())


# -- owners ----------------------------------------------------------------------------------

def _owned_visible(ctx: ListContext):
    """Owner ids of the resources the requester can see, narrowed by ``type``/``title__icontains``."""
    clauses = [perms.visible_to(ctx.principal, ctx.settings)]
    kind = (ctx.params.get("type") or [None])[0]
    if kind:
        clauses.append(Resource.resource_type == kind)
    title = (ctx.params.get("title__icontains") or [None])[0]
    if title:
        clauses.append(Resource.title.icontains(title, autoescape=True))
    return clauses


def list_owners(ctx: ListContext) -> tuple[Listing, dict[int, int]]:
    """Users owning at least one visible resource, and how many each: three statements."""
    visible = _owned_visible(ctx)
    owners = User.id.in_(select(Resource.owner_id).where(*visible))
    listing = query.page(ctx.session, select(User), ctx.query, OWNER_FIELDS, where=[owners])
    return listing, owned_counts(ctx, [u.id for u in listing.rows])


def owned_counts(ctx: ListContext, user_ids: Sequence[int]) -> dict[int, int]:
    if not user_ids:
        return {}
    return dict(ctx.session.execute(
        select(Resource.owner_id, func.count())
        .where(*_owned_visible(ctx), Resource.owner_id.in_(user_ids))
        .group_by(Resource.owner_id)
    ).all())


def get_owner(ctx: ListContext, raw_id: Any) -> tuple[User, int]:
    """One owner; a user with no resource visible to the requester is not an owner (404)."""
    user = ctx.session.get(User, parse_id(raw_id))
    count = owned_counts(ctx, [user.id]).get(user.id, 0) if user is not None else 0
    if not count:
        raise NotFound()
    return user, count
