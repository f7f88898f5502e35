"""cartotheca.db.models.accounts: users, groups, group profiles, OAuth2 clients, tokens, sessions."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import Boolean, ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from cartotheca.db.base import Base, created_at, intpk, utcnow


class User(Base):
    __tablename__ = "users"

    id: Mapped[intpk]
    username: Mapped[str] = mapped_column(String(150), unique=True)
    # None: no usable password (GeoNode creates such accounts when none is given).
    password: Mapped[str | None]
    email: Mapped[str] = mapped_column(String(254), default="", index=True)
    first_name: Mapped[str] = mapped_column(String(150), default="")
    last_name: Mapped[str] = mapped_column(String(150), default="")
    avatar: Mapped[str | None] = mapped_column(String(1024))
    is_staff: Mapped[bool] = mapped_column(Boolean, default=False)
    is_superuser: Mapped[bool] = mapped_column(Boolean, default=False)
    is_active: Mapped[bool] = mapped_column(Boolean, default=True)
    date_joined: Mapped[created_at]
    last_login: Mapped[dt.datetime | None]

    memberships: Mapped[list[GroupMember]] = relationship(
        back_populates="user", lazy="raise", cascade="all, delete-orphan"
    )


class Group(Base):
    """A group of users. The public and registered-members groups are ``internal``."""

    __tablename__ = "groups"

    id: Mapped[intpk]
    name: Mapped[str] = mapped_column(String(150), unique=True)
    internal: Mapped[bool] = mapped_column(Boolean, default=False)

    profile: Mapped[GroupProfile | None] = relationship(
        back_populates="group", lazy="raise", uselist=False
    )
    members: Mapped[list[GroupMember]] = relationship(
        back_populates="group", lazy="raise", cascade="all, delete-orphan"
    )


class GroupProfile(Base):
    __tablename__ = "group_profiles"

    id: Mapped[intpk]
    group_id: Mapped[int] = mapped_column(ForeignKey("groups.id", ondelete="CASCADE"), unique=True)
    title: Mapped[str] = mapped_column(String(255), index=True)
    slug: Mapped[str] = mapped_column(String(255), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    email: Mapped[str | None] = mapped_column(String(254))
    access: Mapped[str] = mapped_column(String(20), default="public")
    logo: Mapped[str | None] = mapped_column(String(1024))
    keywords: Mapped[list[Any]] = mapped_column(default=list)
    categories: Mapped[list[Any]] = mapped_column(default=list)
    created: Mapped[created_at]
    last_modified: Mapped[dt.datetime] = mapped_column(default=utcnow, onupdate=utcnow)

    group: Mapped[Group] = relationship(back_populates="profile", lazy="raise")


class GroupMember(Base):
    __tablename__ = "group_members"
    __table_args__ = (UniqueConstraint("group_id", "user_id"), Index("ix_group_members_user", "user_id"))

    id: Mapped[intpk]
    group_id: Mapped[int] = mapped_column(ForeignKey("groups.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    role: Mapped[str] = mapped_column(String(10), default="member")  # member | manager
    joined: Mapped[created_at]

    group: Mapped[Group] = relationship(back_populates="members", lazy="raise")
    user: Mapped[User] = relationship(back_populates="memberships", lazy="raise")


class OAuthApplication(Base):
    __tablename__ = "oauth_applications"

    id: Mapped[intpk]
    name: Mapped[str] = mapped_column(String(255), default="")
    client_id: Mapped[str] = mapped_column(String(100), unique=True)
    client_secret: Mapped[str | None] = mapped_column(String(255))  # argon2 hash
    client_type: Mapped[str] = mapped_column(String(32), default="confidential")
    authorization_grant_type: Mapped[str] = mapped_column(String(32), default="password")
    redirect_uris: Mapped[str] = mapped_column(Text, default="")
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    created: Mapped[created_at]


class AccessToken(Base):
    """A bearer token. Only a SHA-256 digest of the token is stored."""

    __tablename__ = "access_tokens"

    id: Mapped[intpk]
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    refresh_hash: Mapped[str | None] = mapped_column(String(64), unique=True)
    user_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), index=True
    )
    application_id: Mapped[int | None] = mapped_column(
        ForeignKey("oauth_applications.id", ondelete="CASCADE")
    )
    scope: Mapped[str] = mapped_column(String(255), default="")
    expires: Mapped[dt.datetime]
    created: Mapped[created_at]


class WebSession(Base):
    """A cookie session of the web pages; the key is stored as a SHA-256 digest."""

    __tablename__ = "web_sessions"

    id: Mapped[intpk]
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    csrf_token: Mapped[str] = mapped_column(String(64))
    expires: Mapped[dt.datetime]
    created: Mapped[created_at]


class PasswordResetToken(Base):
    """A one-time link to set a new password, e-mailed on request. Only a SHA-256 digest of the
    key is stored; the row is deleted when used and with every password change of its user."""

    __tablename__ = "password_reset_tokens"

    id: Mapped[intpk]
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    expires: Mapped[dt.datetime] = mapped_column(index=True)
    created: Mapped[created_at]


class LoginFailure(Base):
    """Failed logins counted per lockout key (a client address, an account name, or both),
    shared by every server process. The key is a SHA-256 digest: fixed length, whatever a client
    sends as a user name."""

    __tablename__ = "login_failures"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    failures: Mapped[int]
    last_failure: Mapped[dt.datetime] = mapped_column(index=True)
