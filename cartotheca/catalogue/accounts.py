"""cartotheca.catalogue.accounts: creating, changing and deleting users, ownership transfer, group
managers, deletion rules and web sessions (reading users is ``user_listing``)."""

from __future__ import annotations

import importlib
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from cartotheca.catalogue import events, login_guard, query, reference
from cartotheca.catalogue.auth import (
    Principal,
    digest,
    hash_password,
    open_web_session,
    verify_login,
)
from cartotheca.db.base import utcnow
from cartotheca.db.models import (
    AccessToken,
    Group,
    GroupMember,
    GroupProfile,
    PasswordResetToken,
    Resource,
    User,
    WebSession,
)
from cartotheca.errors import (
    AuthenticationFailed,
    Conflict,
    InvalidInput,
    NotAuthenticated,
    NotFound,
    PermissionDenied,
)
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


# ---------------------------------------------------------------------------------------
# writing users

USER_TEXT = ("email", "first_name", "last_name")


def _text(data: Mapping[str, Any], key: str, limit: int) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or "\x00" in value or len(value) > limit:
        raise InvalidInput(f"{key}: enter a valid value (text of at most {limit} characters).")
    return value.strip()


def validate_password(password: Any, user_values: Sequence[str] = ()) -> str:
    """A small version of Django's default validators (GeoNode runs those on every password)."""
    if not isinstance(password, str) or not password:
        raise InvalidInput("password: this field may not be blank.")
    problems = []
    if len(password) < 8:
        problems.append("This password is too short. It must contain at least 8 characters.")
    if password.isdigit():
        problems.append("This password is entirely numeric.")
    if any(v and len(v) >= 3 and v.lower() in password.lower() for v in user_values):
        problems.append("The password is too similar to the username or e-mail.")
    if problems:
        raise InvalidInput(", ".join(problems))
    return password


def _email(session: Session, data: Mapping[str, Any], settings: Settings,
           current: User | None = None) -> str | None:
    email = _text(data, "email", 254)
    if email is None:
        if current is None and settings.ACCOUNT_EMAIL_REQUIRED:
            raise InvalidInput("email: this field is required.")
        return None
    if email and ("@" not in email or email.startswith("@") or email.endswith("@")):
        raise InvalidInput("email: enter a valid email address.")
    if not email and settings.ACCOUNT_EMAIL_REQUIRED:
        raise InvalidInput("email: this field is required.")
    if email:
        stmt = select(User.id).where(func.lower(User.email) == email.lower())
        if current is not None:
            stmt = stmt.where(User.id != current.id)
        if session.scalar(stmt.limit(1)) is not None:
            raise InvalidInput("A user is already registered with that email")
    return email


def _avatar(data: Mapping[str, Any]) -> str | None:
    avatar = _text(data, "avatar", 1024)
    if avatar and not avatar.startswith(("http://", "https://", "/")):
        raise InvalidInput("avatar: enter a valid URL.")
    return avatar or None


def register_user(session: Session, principal: Principal, settings: Settings,
                  data: Any) -> User:
    """``POST users`` and sign-up: staff create any account; others only when sign-up is open.

    Accounts made by non-staff callers are self sign-ups: staff flags are ignored, a password
    is required, and they start inactive when approval is required.
    """
    if not isinstance(data, Mapping):
        raise InvalidInput("Invalid data. Expected a dictionary.")
    staff = principal.is_staff
    if not staff and not settings.ACCOUNT_OPEN_SIGNUP:
        if principal.id is None:
            raise NotAuthenticated()
        raise PermissionDenied()
    username = validate_username(data.get("username"))
    email = _email(session, data, settings)
    password = data.get("password")
    if password not in (None, "") or not staff:
        validate_password(password, (username, email or ""))
    names = {k: _text(data, k, 150) or "" for k in ("first_name", "last_name")}
    user = create_user(
        session, username=username, password=password or None, email=email or "",
        avatar=_avatar(data), **names,
        is_staff=staff and _flag(data, "is_staff"),
        is_superuser=principal.is_superuser and _flag(data, "is_superuser"),
        is_active=staff or not settings.ACCOUNT_APPROVAL_REQUIRED,
    )
    if not user.is_active:
        events.record(session, events.ACCOUNT_REQUESTED, user=user)
    return user



def signup(session: Session, settings: Settings, data: Any) -> User:
    """The web sign-up form: always a self sign-up, whoever is logged in."""
    if not settings.ACCOUNT_OPEN_SIGNUP:
        raise PermissionDenied("Sign up is closed.")
    return register_user(session, Principal(None, frozenset()), settings, data)

def _flag(data: Mapping[str, Any], key: str) -> bool:
    value = data.get(key, False)
    if isinstance(value, str):
        if not value.strip():  # an empty form field, as DRF's BooleanField reads it
            return False
        try:
            return query.strict_bool(value, key)
        except InvalidInput:
            raise InvalidInput(f"{key}: must be a valid boolean.") from None
    if not isinstance(value, bool | int | None):
        raise InvalidInput(f"{key}: must be a valid boolean.")
    return bool(value)


def _ensure_may_edit(principal: Principal, user: User) -> None:
    if principal.id is None:
        raise NotAuthenticated()
    if principal.id == user.id:
        return
    if not principal.is_staff:
        raise NotFound()
    # A staff member who is not a superuser must not be able to take over a superuser account.
    if user.is_superuser and not principal.is_superuser:
        raise PermissionDenied("Only superusers can change superuser accounts.")


def update_user(session: Session, principal: Principal, settings: Settings, user: User,
                data: Any) -> User:
    """PATCH (and PUT, which behaves the same) of one account."""
    if not isinstance(data, Mapping):
        raise InvalidInput("Invalid data. Expected a dictionary.")
    _ensure_may_edit(principal, user)
    if "username" in data and data["username"] != user.username:
        raise InvalidInput("username cannot be updated")
    email = _email(session, data, settings, current=user)
    if email is not None:
        user.email = email
    for key in ("first_name", "last_name"):
        value = _text(data, key, 150)
        if value is not None:
            setattr(user, key, value)
    if "avatar" in data:
        user.avatar = _avatar(data)
    # Flags from callers without the right are dropped silently, as GeoNode does.
    if principal.is_staff and "is_staff" in data:
        user.is_staff = _flag(data, "is_staff")
    if principal.is_superuser and "is_superuser" in data:
        user.is_superuser = _flag(data, "is_superuser")
    if principal.is_staff and "is_active" in data and user.id != principal.id:
        approved = not user.is_active and _flag(data, "is_active")
        user.is_active = _flag(data, "is_active")
        if approved and settings.ACCOUNT_APPROVAL_REQUIRED:
            events.record(session, events.ACCOUNT_APPROVED, actor=principal, user=user)
    if data.get("password") not in (None, ""):
        set_password(session, user, validate_password(data["password"], (user.username, user.email)))
    session.flush()
    return user


def set_password(session: Session, user: User, password: str) -> None:
    """Give ``user`` the (validated) ``password``. A new password ends every other way in: open
    sessions, issued tokens and password reset links not used yet."""
    user.password = hash_password(password)
    session.execute(delete(WebSession).where(WebSession.user_id == user.id))
    session.execute(delete(AccessToken).where(AccessToken.user_id == user.id))
    session.execute(delete(PasswordResetToken).where(PasswordResetToken.user_id == user.id))


DeletionRule = Callable[[Session, User], "str | None"]


def deletion_rules(settings: Settings) -> list[DeletionRule]:
    rules = []
    for path in settings.USER_DELETION_RULES:
        module, _, name = path.rpartition(".")
        try:
            rules.append(getattr(importlib.import_module(module), name))
        except (ImportError, AttributeError, ValueError):
            raise RuntimeError(f"USER_DELETION_RULES: cannot import {path}") from None
    return rules


def delete_users(session: Session, principal: Principal, settings: Settings,
                 users: Sequence[User]) -> None:
    """Check every configured rule for every user first; delete only if all pass."""
    rules = deletion_rules(settings)
    for user in users:
        _ensure_may_edit(principal, user)
        broken = [msg for rule in rules if (msg := rule(session, user))]
        if broken:
            raise PermissionDenied(
                f"One or more validation rules are violated: {', '.join(broken)}")
    ids = [u.id for u in users]
    if session.scalar(select(Resource.id).where(Resource.owner_id.in_(ids)).limit(1)):
        # Resources keep a non-null owner; whatever the rules say, they must move first.
        raise Conflict("The user still owns resources; transfer them first.")
    session.execute(delete(User).where(User.id.in_(ids)).execution_options(synchronize_session=False))
    for user in users:
        session.expunge(user)


def users_by_ids(session: Session, ids: Sequence[int]) -> list[User]:
    found = {u.id: u for u in session.scalars(select(User).where(User.id.in_(ids)))}
    missing = [i for i in ids if i not in found]
    if missing:
        raise NotFound(f"Not found: {missing[0]}")
    return [found[i] for i in ids]


# ---------------------------------------------------------------------------------------
# ownership transfer and group management

def principal_user(session: Session) -> User:
    """GeoNode's "DEFAULT" owner: the first account that is both superuser and staff."""
    user = session.scalar(select(User).where(User.is_superuser.is_(True), User.is_staff.is_(True),
                                             User.is_active.is_(True)).order_by(User.id).limit(1))
    if user is None:
        raise NotFound("Principal User not found")
    return user


def _as_id(value: Any, key: str) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidInput(f"{key}: a valid integer is required.")
    return value


def transfer_resources(session: Session, principal: Principal, user: User, data: Any) -> int:
    """Move the user's resources to another owner (staff only).

    Two bodies are accepted: GeoNode 4's ``{"owner": id | "DEFAULT"}`` and GeoNode 5's
    ``{"newOwner": id, "currentOwner": id, "resources": [ids]}`` (an empty list: all).
    """
    if not principal.is_staff:
        raise PermissionDenied("Admin access required.")
    if not isinstance(data, Mapping):
        raise InvalidInput("Invalid data. Expected a dictionary.")
    raw_target = data.get("newOwner", data.get("owner"))
    if raw_target is None:
        raise InvalidInput("owner: this field is required.")
    if "currentOwner" in data and _as_id(data["currentOwner"], "currentOwner") != user.id:
        raise InvalidInput("currentOwner does not match the user in the path")
    if raw_target == "DEFAULT":
        target = principal_user(session)
    else:
        target = session.get(User, _as_id(raw_target, "owner"))
        if target is None:
            raise NotFound()
    if target.id == user.id:
        raise InvalidInput("Cannot reassign to self")
    stmt = update(Resource).where(Resource.owner_id == user.id)
    wanted = data.get("resources") or []
    if not isinstance(wanted, list):
        raise InvalidInput("resources: expected a list of ids.")
    if wanted:
        ids = sorted({_as_id(i, "resources") for i in wanted})
        owned = set(session.scalars(select(Resource.id).where(Resource.id.in_(ids),
                                                              Resource.owner_id == user.id)))
        if owned != set(ids):
            missing = sorted(set(ids) - owned)
            raise InvalidInput(f"Resources not owned by the user: {missing}")
        stmt = stmt.where(Resource.id.in_(ids))
    result = session.execute(stmt.values(owner_id=target.id).execution_options(
        synchronize_session=False))
    return result.rowcount


def remove_from_group_manager(session: Session, principal: Principal, user: User,
                              data: Any) -> list[str]:
    """Demote the user from manager to member of the given groups (or ``"ALL"``).

    All or nothing: one id the user does not manage rejects the whole request.
    """
    if principal.id is None:
        raise NotAuthenticated()
    if not principal.is_staff and principal.id != user.id:
        raise NotFound()
    groups = data.get("groups") if isinstance(data, Mapping) else None
    if not groups:
        raise InvalidInput("No groups IDs were provided")
    managed = dict(session.execute(
        select(GroupProfile.id, GroupMember.id)
        .join(GroupMember, GroupMember.group_id == GroupProfile.group_id)
        .where(GroupMember.user_id == user.id, GroupMember.role == "manager")
    ).all())
    if groups == "ALL":
        wanted = sorted(managed)
    elif isinstance(groups, list):
        wanted = [_as_id(g, "groups") for g in groups]
        missing = [g for g in wanted if g not in managed]
        if missing:
            raise InvalidInput(f"User is not manager of the following groups: : {missing}")
    else:
        raise InvalidInput("groups: expected a list of ids or \"ALL\".")
    if wanted:
        session.execute(update(GroupMember).where(GroupMember.id.in_([managed[g] for g in wanted]))
                        .values(role="member").execution_options(synchronize_session=False))
    return list(session.scalars(select(GroupProfile.title).where(GroupProfile.id.in_(wanted))
                                .order_by(GroupProfile.title)))


# ---------------------------------------------------------------------------------------
# web sessions

def login(session: Session, settings: Settings, data: Any,
          address: str | None = None) -> tuple[User, str, WebSession]:
    """Check a username and password and open a cookie session for the web pages; failed
    logins are throttled per account and per client ``address``."""
    if not isinstance(data, Mapping):
        raise InvalidInput("Invalid data. Expected a dictionary.")
    username, password = data.get("username"), data.get("password")
    if not isinstance(username, str) or not isinstance(password, str) or not username:
        raise InvalidInput("username and password are required.")
    keys = login_guard.lockout_keys(settings, username, address)
    login_guard.refuse_if_locked(session, settings, keys)
    user = None if "\x00" in username else session.scalar(select(User).where(User.username == username))
    if not verify_login(session, settings, user, username, password, address, checked=True):
        raise AuthenticationFailed()
    if not user.is_active:
        raise AuthenticationFailed("User inactive or deleted.")
    user.last_login = utcnow()
    key, web = open_web_session(session, user, settings.SESSION_COOKIE_AGE)
    return user, key, web


def logout(session: Session, key: str | None) -> None:
    if key:
        session.execute(delete(WebSession).where(WebSession.key_hash == digest(key)))
