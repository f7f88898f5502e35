"""cartotheca.catalogue.accounts: users, groups, owners, managers, ownership transfer, deletion rules."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from cartotheca.catalogue.auth import hash_password
from cartotheca.db.models import Group, Resource, User
from cartotheca.errors import InvalidInput
from cartotheca.settings import Settings

_INTERNAL_CACHE: dict[tuple[str, str, str], tuple[int, int]] = {}


def internal_group_ids(session: Session, settings: Settings) -> tuple[int, int]:
    """(anonymous group id, registered-members group id), created if missing."""
    key = (str(session.get_bind().url), settings.ANONYMOUS_GROUP_NAME,
           settings.REGISTERED_MEMBERS_GROUP_NAME)
    if key in _INTERNAL_CACHE:
        return _INTERNAL_CACHE[key]
    ids = []
    for name in (settings.ANONYMOUS_GROUP_NAME, settings.REGISTERED_MEMBERS_GROUP_NAME):
        group_id = session.scalar(select(Group.id).where(Group.name == name))
        if group_id is None:
            group = Group(name=name, internal=True)
            session.add(group)
            session.flush()
            group_id = group.id
        ids.append(group_id)
    result = (ids[0], ids[1])
    _INTERNAL_CACHE[key] = result
    return result


def forget_internal_groups() -> None:
    _INTERNAL_CACHE.clear()


@dataclass
class BootstrapResult:
    admin_created: bool
    username: str | None = None
    generated_password: str | None = None


def bootstrap(session: Session, settings: Settings, *, create_admin: bool = True) -> BootstrapResult:
    """Internal groups, reference data and the first administrator, on an empty database."""
    from cartotheca.catalogue import reference

    forget_internal_groups()
    internal_group_ids(session, settings)
    reference.seed(session)
    if not create_admin:
        return BootstrapResult(False)
    has_admin = session.scalar(select(User.id).where(User.is_superuser.is_(True)).limit(1))
    if has_admin is not None:
        return BootstrapResult(False)
    password = settings.ADMIN_PASSWORD
    generated = None
    if not password:
        password = generated = secrets.token_urlsafe(12)
    user = create_user(session, username=settings.ADMIN_USER, password=password,
                       email=settings.ADMIN_EMAIL, is_staff=True, is_superuser=True)
    return BootstrapResult(True, user.username, generated)


def create_user(session: Session, *, username: str, password: str | None = None, email: str = "",
                first_name: str = "", last_name: str = "", is_staff: bool = False,
                is_superuser: bool = False, is_active: bool = True,
                avatar: str | None = None) -> User:
    validate_username(username)
    if session.scalar(select(User.id).where(User.username == username)) is not None:
        raise InvalidInput("A user with that username already exists.")
    user = User(
        username=username,
        password=hash_password(password) if password else None,
        email=email or "",
        first_name=first_name or "",
        last_name=last_name or "",
        is_staff=is_staff,
        is_superuser=is_superuser,
        is_active=is_active,
        avatar=avatar,
    )
    session.add(user)
    session.flush()
    return user


def validate_username(username: object) -> str:
    if not isinstance(username, str) or not username:
        raise InvalidInput("username: this field is required.")
    if len(username) > 150 or not all(c.isalnum() or c in "@.+-_" for c in username):
        raise InvalidInput(
            "username: enter a valid username (letters, digits and @/./+/-/_ only, at most 150)."
        )
    return username


def rule_user_owns_no_resources(session: Session, user: User) -> str | None:
    """Default deletion rule: a user who still owns resources cannot be deleted."""
    owned = session.scalar(select(Resource.id).where(Resource.owner_id == user.id).limit(1))
    if owned is not None:
        return "user owns resources; transfer them first"
    return None
