"""cartotheca.catalogue.permission_specs: read, validate and apply perm specs on one resource.

Two wire forms exist: the compact form of the permissions endpoint (``users``/``groups``/
``organizations`` lists of ``{id, permissions: <level>}``) and the legacy mapping form of
``get_perms``/``set_perms`` (``{users: {name: [codenames]}, groups: {name: [codenames]}}``).
Both arrive as typed models (``CompactSpec``, ``NamedSpec``) checked completely before
anything changes; the functions here look the users and groups up and apply the levels.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationInfo, field_validator, model_validator
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from cartotheca.catalogue import permissions as perms
from cartotheca.catalogue.accounts import internal_group_ids
from cartotheca.catalogue.inputs import invalid
from cartotheca.db.models import Group, GroupProfile, Resource, ResourcePermission, User
from cartotheca.errors import InvalidInput
from cartotheca.settings import Settings

ANONYMOUS_USER_ID = -1
ANONYMOUS_USER_NAME = "AnonymousUser"
SETTABLE_LEVELS = ("none", "view", "download", "edit", "manage")


@dataclass
class Spec:
    """A validated spec: levels per user id and per group id (None level = untouched)."""

    users: dict[int, str] = field(default_factory=dict)
    groups: dict[int, str] = field(default_factory=dict)

    def as_input(self) -> dict[str, Any]:
        return {"users": [{"id": k, "permissions": v} for k, v in self.users.items()],
                "groups": [{"id": k, "permissions": v} for k, v in self.groups.items()]}

    @classmethod
    def from_input(cls, data: Mapping[str, Any]) -> Spec:
        return cls(users={int(i["id"]): i["permissions"] for i in data.get("users", [])},
                   groups={int(i["id"]): i["permissions"] for i in data.get("groups", [])})


def level_of(names: set[str], resource: Resource) -> str:
    """The highest level whose permission names (for this type) are all held."""
    for level in ("manage", "edit", "download", "view"):
        wanted = set(perms.for_type(perms.LEVELS[level], resource.resource_type, resource.subtype))
        if wanted and wanted <= names:
            return level
    return "none"


def _for_type(level: str, resource: Resource) -> str:
    # "download" only exists for datasets and documents; elsewhere it is "view" (GeoNode).
    if level == "download" and resource.resource_type not in perms.DOWNLOADABLE_TYPES:
        return "view"
    return level


Grant = tuple[int, str]  # (user or group id, level)


class CompactSpec(BaseModel):
    """The permissions endpoint's body: ``users``/``groups``/``organizations`` lists of
    ``{id, permissions: <level>}``; ``uuid``, ``owner`` and ``created`` are echoes of the record
    a client read, accepted and not applied."""

    users: list[Grant] = []
    groups: list[Grant] = []
    organizations: list[Grant] = []
    uuid: Any = None
    owner: Any = None
    created: Any = False

    @model_validator(mode="before")
    @classmethod
    def _object(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            raise invalid("Expected a JSON object with users, groups and organizations lists")
        unknown = set(data) - set(cls.model_fields)
        if unknown:
            raise invalid(f"Unknown key in permission spec: {sorted(unknown)[0]}")
        return data

    @field_validator("users", "groups", "organizations", mode="plain")
    @classmethod
    def _grants(cls, items: Any, info: ValidationInfo) -> list[Grant]:
        key = info.field_name
        if not isinstance(items, list):
            raise invalid(f"{key}: expected a list of {{id, permissions}} objects")
        out = []
        for item in items:
            if not isinstance(item, Mapping) or "id" not in item or "permissions" not in item:
                raise invalid(f"{key}: each item needs \"id\" and \"permissions\"")
            ident = item["id"]
            if isinstance(ident, str) and ident.lstrip("-").isdigit():
                ident = int(ident)
            if not isinstance(ident, int) or isinstance(ident, bool):
                raise invalid(f"{key}: id must be an integer")
            level = item["permissions"]
            if not isinstance(level, str) or level not in SETTABLE_LEVELS + ("owner",):
                raise invalid(f"{key}: unknown permission level {level!r}; expected one of "
                              + ", ".join(SETTABLE_LEVELS))
            out.append((ident, level))
        return out


class NamedSpec(BaseModel):
    """The legacy form of ``set_perms`` and uploads: ``{users: {name: [permission names]},
    groups: {name: [permission names]}}``."""

    users: dict[str, list[str]] = {}
    groups: dict[str, list[str]] = {}

    @model_validator(mode="before")
    @classmethod
    def _object(cls, data: Any) -> Any:
        if not isinstance(data, Mapping) or not set(data) <= {"users", "groups"}:
            raise invalid("Expected {\"users\": {name: [permissions]}, \"groups\": {...}}")
        return data

    @field_validator("users", "groups", mode="plain")
    @classmethod
    def _names(cls, mapping: Any, info: ValidationInfo) -> dict[str, list[str]]:
        key = info.field_name
        if not isinstance(mapping, Mapping):
            raise invalid(f"{key}: expected an object of name → permission names")
        for name, names in mapping.items():
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise invalid(f"{key}.{name}: expected a list of permission names")
            bad = [n for n in names if n not in perms.ALL_PERMISSION_NAMES]
            if bad:
                raise invalid(f"{key}.{name}: unknown permission {bad[0]}")
        return dict(mapping)


def compact_spec(session: Session, settings: Settings, resource: Resource, body: CompactSpec) -> Spec:
    """The levels of a compact spec for ``resource``, its users and groups checked to exist."""
    anonymous_id, _ = internal_group_ids(session, settings)
    spec = Spec()
    for ident, level in body.users:
        if ident == ANONYMOUS_USER_ID:
            spec.groups[anonymous_id] = _for_type(level, resource)
        else:
            spec.users[ident] = _for_type(level, resource)
    for ident, level in (*body.groups, *body.organizations):
        spec.groups[ident] = _for_type(level, resource)
    _check_principals(session, resource, spec)
    return spec


def _check_principals(session: Session, resource: Resource, spec: Spec) -> None:
    if spec.users:
        found = dict(session.execute(
            select(User.id, User.is_superuser).where(User.id.in_(list(spec.users)))).all())
        for user_id, level in spec.users.items():
            if user_id not in found:
                raise InvalidInput(f"users: unknown user id {user_id}")
            if level == "owner" and user_id != resource.owner_id:
                raise InvalidInput(f"users: only the owner has the level owner (user {user_id})")
    if spec.groups:
        known = set(session.scalars(select(Group.id).where(Group.id.in_(list(spec.groups)))))
        for group_id, level in spec.groups.items():
            if group_id not in known:
                raise InvalidInput(f"groups: unknown group id {group_id}")
            if level == "owner":
                raise InvalidInput(f"groups: a group cannot have the level owner ({group_id})")


def named_spec(session: Session, settings: Settings, resource: Resource, body: NamedSpec) -> Spec:
    """The levels of a legacy spec for ``resource``: users and groups looked up by name."""
    anonymous_id, _ = internal_group_ids(session, settings)
    spec = Spec()
    for key, mapping in (("users", body.users), ("groups", body.groups)):
        for name, names in mapping.items():
            level = level_of(set(names), resource)
            if key == "users" and name == ANONYMOUS_USER_NAME:
                spec.groups[anonymous_id] = level
                continue
            model, column = (User, User.username) if key == "users" else (Group, Group.name)
            ident = session.scalar(select(model.id).where(column == name))
            if ident is None:
                raise InvalidInput(f"{key}: unknown {key[:-1]} {name}")
            (spec.users if key == "users" else spec.groups)[ident] = level
    return spec


def apply(session: Session, resource: Resource, spec: Spec, mode: str) -> None:
    """``replace`` (PUT), ``merge`` (PATCH) or ``remove`` (DELETE) the resource's grants.

    The owner's rights come from ownership and a superuser's from the account, so levels sent
    for them change nothing.
    """
    table = ResourcePermission
    if mode in ("replace", "remove"):
        session.execute(delete(table).where(table.resource_id == resource.id))
    if mode == "remove":
        return
    for user_id, level in spec.users.items():
        if user_id == resource.owner_id:
            continue
        if mode == "merge":
            session.execute(delete(table).where(table.resource_id == resource.id,
                                                table.user_id == user_id))
        _grant(session, resource, level, user_id=user_id)
    for group_id, level in spec.groups.items():
        if mode == "merge":
            session.execute(delete(table).where(table.resource_id == resource.id,
                                                table.group_id == group_id))
        _grant(session, resource, level, group_id=group_id)


def _grant(session: Session, resource: Resource, level: str, **principal: int) -> None:
    if level in ("none", "owner"):
        return
    for codename in perms.for_type(perms.LEVELS[level], resource.resource_type, resource.subtype):
        session.add(ResourcePermission(resource_id=resource.id, codename=codename, **principal))


def grants_of(session: Session, resource: Resource) -> tuple[dict[int, set[str]], dict[int, set[str]]]:
    users: dict[int, set[str]] = {}
    groups: dict[int, set[str]] = {}
    rows = session.execute(select(ResourcePermission.user_id, ResourcePermission.group_id,
                                  ResourcePermission.codename)
                           .where(ResourcePermission.resource_id == resource.id))
    for user_id, group_id, codename in rows:
        if user_id is not None:
            users.setdefault(user_id, set()).add(codename)
        else:
            groups.setdefault(group_id, set()).add(codename)
    return users, groups


def describe(session: Session, settings: Settings, resource: Resource
             ) -> tuple[list[tuple[User, str]], list[tuple[Group, GroupProfile | None, str]]]:
    """Who holds which level: users (owner and superusers included) and groups."""
    users, groups = grants_of(session, resource)
    anonymous_id, registered_id = internal_group_ids(session, settings)
    wanted_users = set(users) | {resource.owner_id}
    user_rows = session.scalars(
        select(User).where((User.id.in_(wanted_users)) | (User.is_superuser.is_(True)))
    ).all()
    out_users = []
    for user in user_rows:
        if user.id == resource.owner_id:
            level = "owner"
        elif user.is_superuser:
            level = "manage"
        else:
            level = level_of(users.get(user.id, set()), resource)
            if level == "none":
                continue
        out_users.append((user, level))
    group_ids = set(groups) | {anonymous_id, registered_id}
    group_rows = session.execute(
        select(Group, GroupProfile).outerjoin(GroupProfile, GroupProfile.group_id == Group.id)
        .where(Group.id.in_(group_ids))
    ).all()
    out_groups = []
    for group, profile in group_rows:
        level = level_of(groups.get(group.id, set()), resource)
        if level == "none" and not group.internal:
            continue
        out_groups.append((group, profile, level))
    out_users.sort(key=lambda pair: pair[0].id, reverse=True)
    out_groups.sort(key=lambda triple: triple[0].id, reverse=True)
    return out_users, out_groups


def mapping(session: Session, settings: Settings, resource: Resource) -> dict[str, Any]:
    """The legacy ``get_perms`` body: permission names per user name and group name."""
    users, groups = describe(session, settings, resource)
    anonymous_id, _ = internal_group_ids(session, settings)
    out_users: dict[str, list[str]] = {}
    for user, level in users:
        names = perms.LEVELS["owner"] if level == "owner" else perms.LEVELS[level]
        out_users[user.username] = perms.for_type(names, resource.resource_type, resource.subtype)
    out_groups: dict[str, list[str]] = {}
    for group, _profile, level in groups:
        names = perms.for_type(perms.LEVELS[level], resource.resource_type, resource.subtype)
        if not names:
            continue
        out_groups[group.name] = names
        if group.id == anonymous_id:
            out_users[ANONYMOUS_USER_NAME] = names
    return {"users": out_users, "groups": out_groups}
