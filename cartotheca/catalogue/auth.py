"""cartotheca.catalogue.auth: password hashing, tokens, and who is asking (the Principal)."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
import hmac
import secrets
import threading
import time
from dataclasses import dataclass, field

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from cartotheca.catalogue import login_guard
from cartotheca.db.base import utcnow
from cartotheca.db.models import AccessToken, Group, GroupMember, User, WebSession
from cartotheca.errors import AuthenticationFailed
from cartotheca.settings import Settings

_hasher = PasswordHasher()
_dummy_hash: str | None = None


def configure_password_hashing(settings: Settings) -> None:
    """Set the cost of new password hashes (existing hashes carry their own parameters); called
    once per process by whatever starts it (the app, the CLI)."""
    global _hasher, _dummy_hash
    _hasher = PasswordHasher(time_cost=settings.PASSWORD_HASH_TIME_COST,
                             memory_cost=settings.PASSWORD_HASH_MEMORY_KIB,
                             parallelism=settings.PASSWORD_HASH_PARALLELISM)
    _dummy_hash = None


def _dummy() -> str:
    global _dummy_hash
    if _dummy_hash is None:
        _dummy_hash = _hasher.hash(secrets.token_hex(8))
    return _dummy_hash


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def check_password(stored: str | None, password: str) -> bool:
    if not stored:
        return False
    try:
        return _hasher.verify(stored, password)
    except (VerificationError, InvalidHashError):
        return False


def verify_login(session: Session, settings: Settings, user: User | None, username: str | None,
                 password: str, address: str | None, *, checked: bool = False) -> bool:
    """Whether ``password`` is ``user``'s, under the failed-login lockout and the limit on
    concurrent checks; an unknown account costs a dummy check (no timing oracle)."""
    stored = user.password if user is not None else None

    def check() -> bool:
        # Parallel first requests of one client queue with the same credentials: once one of
        # them has verified them, the others need no hash of their own.
        if user is not None and CREDENTIALS.known(user, password):
            return True
        return check_password(stored or _dummy(), password) and bool(stored)

    return login_guard.verify(session, settings, username=username, address=address,
                              checked=checked, check=check)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token() -> str:
    return secrets.token_urlsafe(32)


class VerifiedCredentials:
    """Remembers recently verified Basic credentials for a short time.

    Clients such as geonodectl send Basic credentials on every request; a memory-hard hash
    per request would cost tens of milliseconds each. The cache key is an HMAC of the
    password, and an entry is only valid while the stored hash is unchanged, so a password
    change or reset takes effect at once.
    """

    def __init__(self, ttl: float = 300.0, size: int = 4096):
        self.ttl, self.size = ttl, size
        self._key = secrets.token_bytes(32)
        self._entries: dict[tuple[int, str, str], float] = {}
        self._names: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()

    def _mac(self, password: str) -> str:
        return hmac.new(self._key, password.encode(), hashlib.sha256).hexdigest()

    def known(self, user: User, password: str) -> bool:
        """Whether these are ``user``'s verified credentials. Each use keeps them for another
        ``ttl``: a client that keeps sending them never needs a hash again, so the checks of a
        busy server's clients do not all fall due together, each ``ttl``, and overflow the
        queue for password checks (503s)."""
        mac = self._mac(password)
        key = (user.id, user.password or "", mac)
        now = time.monotonic()
        with self._lock:
            stamp = self._entries.get(key)
            if stamp is None or now - stamp >= self.ttl:
                return False
            self._entries[key] = now
            self._names[(user.username, mac)] = now
        return True

    def known_name(self, username: str, password: str) -> bool:
        """Whether these credentials were verified recently, before the account is read: a
        hint for refusing early under load, not a verification (``known`` is)."""
        with self._lock:
            stamp = self._names.get((username, self._mac(password)))
        return stamp is not None and time.monotonic() - stamp < self.ttl

    def remember(self, user: User, password: str) -> None:
        mac = self._mac(password)
        with self._lock:
            if len(self._entries) >= self.size:
                self._entries.clear()
                self._names.clear()
            now = time.monotonic()
            self._entries[(user.id, user.password or "", mac)] = now
            self._names[(user.username, mac)] = now


CREDENTIALS = VerifiedCredentials()


@dataclass(frozen=True)
class InternalGroups:
    anonymous_id: int
    registered_id: int


@dataclass
class Principal:
    """The requester, resolved once per request."""

    user: User | None
    group_ids: frozenset[int]
    managed_group_ids: frozenset[int] = field(default_factory=frozenset)
    member_group_ids: frozenset[int] = field(default_factory=frozenset)
    scopes: frozenset[str] = field(default_factory=frozenset)
    via: str = "anonymous"  # anonymous | basic | bearer | session

    @property
    def is_authenticated(self) -> bool:
        return self.user is not None

    @property
    def id(self) -> int | None:
        return self.user.id if self.user else None

    @property
    def is_superuser(self) -> bool:
        return bool(self.user and self.user.is_superuser and self.user.is_active)

    @property
    def is_staff(self) -> bool:
        return bool(self.user and (self.user.is_staff or self.user.is_superuser))

    @property
    def username(self) -> str | None:
        return self.user.username if self.user else None


def anonymous(groups: InternalGroups) -> Principal:
    return Principal(None, frozenset({groups.anonymous_id}))


def principal_for(session: Session, user: User, groups: InternalGroups, via: str,
                  scopes: frozenset[str] = frozenset(),
                  memberships: list[tuple[int, str]] | None = None) -> Principal:
    rows = memberships if memberships is not None else session.execute(
        select(GroupMember.group_id, GroupMember.role).where(GroupMember.user_id == user.id)
    ).all()
    member = frozenset(gid for gid, _ in rows)
    managed = frozenset(gid for gid, role in rows if role == "manager")
    return Principal(
        user,
        member | {groups.anonymous_id, groups.registered_id},
        managed_group_ids=managed,
        member_group_ids=member,
        scopes=scopes,
        via=via,
    )


def load_internal_groups(session: Session, anonymous_name: str, registered_name: str) -> InternalGroups:
    ids = dict(
        session.execute(
            select(Group.name, Group.id).where(Group.name.in_([anonymous_name, registered_name]))
        ).all()
    )
    return InternalGroups(ids[anonymous_name], ids[registered_name])


def user_from_basic(session: Session, header_value: str, settings: Settings,
                    address: str | None) -> tuple[User, list[tuple[int, str]]]:
    """The user of a Basic header and their group memberships, in one statement; failed
    logins are throttled per account and per client ``address`` (see ``login_guard``)."""
    try:
        decoded = base64.b64decode(header_value.strip(), validate=True).decode("utf-8")
        username, sep, password = decoded.partition(":")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise AuthenticationFailed(
            "Invalid basic header. Credentials not correctly base64 encoded.") from None
    if not sep:
        raise AuthenticationFailed("Invalid basic header. Credentials not correctly base64 encoded.")
    # While every password check slot and waiting place is taken, credentials that would need
    # a check are refused before any statement: a flood of made-up passwords then costs no
    # database work, and requests with recently verified credentials go on being served.
    if login_guard.no_room_for_a_check(settings) and not CREDENTIALS.known_name(username, password):
        raise login_guard.busy(settings)
    # A locked-out account or address is refused even with the right password, before any
    # hashing and before the remembered credentials are consulted. The lockout is read in the
    # account's own statement, so a Basic request costs no statement more than before.
    keys = login_guard.lockout_keys(settings, username, address)
    locked = login_guard.locked_since(settings, keys)
    columns = [User, GroupMember.group_id, GroupMember.role, *([locked] if locked is not None else [])]
    # No account name holds a NUL character (PostgreSQL could not even compare one).
    rows = [] if "\x00" in username else session.execute(
        select(*columns)
        .outerjoin(GroupMember, GroupMember.user_id == User.id)
        .where(User.username == username)
    ).all()
    if rows and locked is not None:
        login_guard.raise_if_locked(settings, rows[0][3])
    elif not rows:
        login_guard.refuse_if_locked(session, settings, keys)
    user = rows[0][0] if rows else None
    if user is None or not CREDENTIALS.known(user, password):
        if not verify_login(session, settings, user, username, password, address, checked=True):
            raise AuthenticationFailed()
        CREDENTIALS.remember(user, password)
    if not user.is_active:
        raise AuthenticationFailed("User inactive or deleted.")
    return user, [(row[1], row[2]) for row in rows if row[1] is not None]


def user_from_bearer(session: Session, token: str) -> tuple[User | None, frozenset[str]]:
    """An unknown or expired token is not an error by itself: the request is anonymous."""
    row = session.execute(
        select(AccessToken, User)
        .join(User, User.id == AccessToken.user_id)
        .where(AccessToken.token_hash == digest(token.strip()))
    ).first()
    if row is None:
        return None, frozenset()
    access, user = row
    if access.expires <= utcnow() or not user.is_active:
        return None, frozenset()
    return user, frozenset(access.scope.split())


def user_from_session(session: Session, key: str) -> tuple[User | None, WebSession | None]:
    row = session.execute(
        select(WebSession, User)
        .join(User, User.id == WebSession.user_id)
        .where(WebSession.key_hash == digest(key))
    ).first()
    if row is None:
        return None, None
    web, user = row
    if web.expires <= utcnow() or not user.is_active:
        return None, None
    return user, web


def issue_token(session: Session, user: User | None, *, application_id: int | None, scope: str,
                lifetime: int, with_refresh: bool = True) -> tuple[str, str | None, AccessToken]:
    token = new_token()
    refresh = new_token() if with_refresh else None
    row = AccessToken(
        token_hash=digest(token),
        refresh_hash=digest(refresh) if refresh else None,
        user_id=user.id if user else None,
        application_id=application_id,
        scope=scope,
        expires=utcnow() + dt.timedelta(seconds=lifetime),
    )
    session.add(row)
    session.flush()
    return token, refresh, row


def open_web_session(session: Session, user: User, lifetime: int) -> tuple[str, WebSession]:
    key = new_token()
    web = WebSession(
        key_hash=digest(key),
        user_id=user.id,
        csrf_token=secrets.token_hex(16),
        expires=utcnow() + dt.timedelta(seconds=lifetime),
    )
    session.add(web)
    session.flush()
    return key, web
