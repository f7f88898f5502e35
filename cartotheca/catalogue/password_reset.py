"""cartotheca.catalogue.password_reset: "forgot password" by e-mail, as django-allauth's flow.

A request names an e-mail address; every active account with that address gets a one-time key,
stored as a SHA-256 digest, usable for PASSWORD_RESET_TIMEOUT seconds. The answer is the same
whether or not an account has the address, and requests are counted like failed logins (per
address and per e-mail, apart from the logins' own counts), so the form neither tells who has
an account nor lets anyone flood a mailbox. Setting the new password deletes every key of the
account (the used one included), its sessions and its tokens.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from cartotheca.catalogue import accounts, login_guard
from cartotheca.catalogue.auth import digest, new_token
from cartotheca.db.base import utcnow
from cartotheca.db.models import PasswordResetToken, User
from cartotheca.errors import InvalidInput
from cartotheca.settings import Settings

PURPOSE = "password-reset"
# The one answer to every well-formed request, whether an account has the address or not.
REQUESTED = ("If an account has this e-mail address, a message with a link to set a new password "
             "has been sent to it.")
INVALID_KEY = "This password reset link is invalid, was already used or has expired. Ask for a new one."
MAX_KEY_LENGTH = 128


@dataclass(frozen=True)
class ResetMail:
    """A message to send once the request has been answered."""

    recipient: str
    subject: str
    body: str


def key_path(key: str) -> str:
    """The page's path for ``key`` (under the site URL)."""
    return f"/account/password/reset/key/{key}"


def _email(data: Any) -> str:
    if not isinstance(data, Mapping):
        raise InvalidInput("Invalid data. Expected a dictionary.")
    email = data.get("email")
    if not isinstance(email, str) or not email.strip():
        raise InvalidInput("email: this field is required.")
    email = email.strip()
    if len(email) > 254 or "@" not in email or email.startswith("@") or email.endswith("@"):
        raise InvalidInput("email: enter a valid email address.")
    return email


def _message(settings: Settings, site: str, user: User, key: str) -> ResetMail:
    days = settings.PASSWORD_RESET_TIMEOUT / 86400
    within = f"{days:g} days" if days >= 1 else f"{settings.PASSWORD_RESET_TIMEOUT // 60} minutes"
    body = (
        f"Someone asked to set a new password for the account \"{user.username}\" at {site}/.\n\n"
        f"To choose a new password, open this link within {within}:\n\n"
        f"{site}{key_path(key)}\n\n"
        "The link works once. If you did not ask for a new password, ignore this message: "
        "your password stays as it is.\n"
    )
    return ResetMail(user.email, "Set a new password", body)


def request_reset(session: Session, settings: Settings, data: Any, address: str | None,
                  site: str) -> list[ResetMail]:
    """Issue a key to each active account with the requested e-mail address and return the
    messages to send (links under ``site``, the site URL without its trailing slash). Each
    request counts against the address and the e-mail: past AXES_FAILURE_LIMIT within the
    cool-off, TooManyAttempts."""
    email = _email(data)
    keys = login_guard.lockout_keys(settings, email, address, purpose=PURPOSE)
    login_guard.refuse_if_locked(session, settings, keys)
    users = session.scalars(select(User).where(
        func.lower(User.email) == email.lower(), User.is_active.is_(True)).order_by(User.id)).all()
    now = utcnow()
    session.execute(delete(PasswordResetToken).where(PasswordResetToken.expires <= now))
    mails = []
    for user in users:
        key = new_token()
        session.add(PasswordResetToken(
            key_hash=digest(key), user_id=user.id,
            expires=now + dt.timedelta(seconds=settings.PASSWORD_RESET_TIMEOUT)))
        mails.append(_message(settings, site, user, key))
    # Counted as a failure whatever the outcome: the limit is on requests, not on misses.
    login_guard.record_failure(session, settings, keys)
    return mails


def _valid_token(session: Session, key: Any) -> tuple[PasswordResetToken, User] | None:
    if not isinstance(key, str) or not key or len(key) > MAX_KEY_LENGTH:
        return None
    row = session.execute(
        select(PasswordResetToken, User).join(User, User.id == PasswordResetToken.user_id)
        .where(PasswordResetToken.key_hash == digest(key))
    ).first()
    if row is None:
        return None
    token, user = row
    if token.expires <= utcnow() or not user.is_active:
        return None
    return token, user


def check_key(session: Session, key: Any) -> str:
    """The username a still usable ``key`` was issued for; InvalidInput otherwise."""
    found = _valid_token(session, key)
    if found is None:
        raise InvalidInput(INVALID_KEY)
    return found[1].username


def reset_password(session: Session, settings: Settings, data: Any) -> User:
    """Set the new password given with a usable key; the key, and every other of the account,
    can no longer be used, and the account's sessions and tokens end."""
    if not isinstance(data, Mapping):
        raise InvalidInput("Invalid data. Expected a dictionary.")
    found = _valid_token(session, data.get("key"))
    if found is None:
        raise InvalidInput(INVALID_KEY)
    _token, user = found
    password = accounts.validate_password(data.get("password"), (user.username, user.email))
    accounts.set_password(session, user, password)
    session.flush()
    return user
