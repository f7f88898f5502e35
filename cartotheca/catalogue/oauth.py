"""cartotheca.catalogue.oauth: the OAuth2 token server (oauthlib) over our applications and tokens.

oauthlib does the protocol (RFC 6749 grants, RFC 7009 revocation, error bodies); the
``Validator`` below answers its questions from ``OAuthApplication`` and ``AccessToken`` rows and
mints tokens through ``catalogue.auth.issue_token`` so that Bearer lookup stays in one place.
"""

from __future__ import annotations

import base64
import binascii
import secrets
import string
from collections.abc import Iterable, Sequence
from functools import cache
from typing import Any
from urllib.parse import unquote_plus, urlsplit

from oauthlib.oauth2 import (
    BearerToken,
    ClientCredentialsGrant,
    RefreshTokenGrant,
    RequestValidator,
    ResourceOwnerPasswordCredentialsGrant,
    RevocationEndpoint,
    TokenEndpoint,
)
from pydantic import BaseModel, ValidationInfo, field_validator, model_validator
from sqlalchemy import delete, or_, select
from sqlalchemy.orm import Session

from cartotheca.catalogue import auth, login_guard
from cartotheca.catalogue.auth import Principal
from cartotheca.catalogue.inputs import invalid
from cartotheca.db.models import AccessToken, Group, GroupMember, OAuthApplication, User
from cartotheca.errors import InvalidInput, NotFound, PermissionDenied
from cartotheca.settings import Settings

SCOPES = ("openid", "read", "write", "groups")
DEFAULT_SCOPES = ("openid", "read", "write")
GRANT_TYPES = ("password", "client_credentials")
CLIENT_TYPES = ("confidential", "public")
NAME_MAX_LENGTH = 255
# Letters and digits only, as GeoNode's OAuth toolkit makes them: an identifier that
# could start with "-" would be read as an option by command-line tools.
CLIENT_ID_ALPHABET = string.ascii_letters + string.digits
CLIENT_ID_LENGTH = 40


def create_application(session: Session, *, name: str, user: User | None = None,
                       client_type: str = "confidential", grant_types: Iterable[str] = ("password",),
                       redirect_uris: str | Sequence[str] = "") -> tuple[OAuthApplication, str | None]:
    """A new client; returns it with its secret in clear (shown once, stored only as a hash).

    ``client_credentials`` tokens act for ``user`` (the application's owner), if any.
    """
    name = (name or "").strip()
    if not name or len(name) > NAME_MAX_LENGTH:
        raise InvalidInput(f"an application needs a name of 1 to {NAME_MAX_LENGTH} characters")
    kinds = list(dict.fromkeys(grant_types))
    if not kinds or any(k not in GRANT_TYPES for k in kinds):
        raise InvalidInput(f"grant types must be among {', '.join(GRANT_TYPES)}")
    if client_type not in CLIENT_TYPES:
        raise InvalidInput(f"client type must be one of {', '.join(CLIENT_TYPES)}")
    if client_type == "public" and "client_credentials" in kinds:
        raise InvalidInput("a public client cannot use the client_credentials grant")
    if not isinstance(redirect_uris, str):
        redirect_uris = " ".join(_checked_redirect_uri(uri) for uri in redirect_uris)
    secret = secrets.token_urlsafe(36) if client_type == "confidential" else None
    app = OAuthApplication(
        name=name, client_id=_new_client_id(), client_type=client_type,
        client_secret=auth.hash_password(secret) if secret else None,
        authorization_grant_type=" ".join(kinds), redirect_uris=redirect_uris,
        user_id=user.id if user else None,
    )
    session.add(app)
    session.flush()
    return app, secret


def _new_client_id() -> str:
    return "".join(secrets.choice(CLIENT_ID_ALPHABET) for _ in range(CLIENT_ID_LENGTH))


def _checked_redirect_uri(uri: str) -> str:
    parts = urlsplit(uri.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.fragment:
        raise InvalidInput(f"a redirect URI must be an absolute http(s) URL without a fragment: {uri!r}")
    return uri.strip()


def user_named(session: Session, username: str) -> User:
    """The owner an application is created for (its client_credentials tokens act as them)."""
    user = session.scalar(select(User).where(User.username == username))
    if user is None:
        raise NotFound(f"No user named {username!r}")
    return user


class ApplicationFields(BaseModel):
    """The body of registering an application (the web page's JSON). Lists may come as one
    text: grant types split at commas, redirect URIs at whitespace."""

    grant_types: list[str] = ["password"]
    redirect_uris: list[str] = []
    name: str = ""
    client_type: str = "confidential"
    user: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _object(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise invalid("expected a JSON object")
        return data

    @field_validator("grant_types", "redirect_uris", mode="plain")
    @classmethod
    def _strings(cls, value: Any, info: ValidationInfo) -> list[str]:
        if isinstance(value, str):
            value = value.split("," if info.field_name == "grant_types" else None)
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise invalid(f"{info.field_name} must be a list of texts")
        return [item.strip() for item in value if item.strip()]

    @field_validator("name", "client_type", "user", mode="plain")
    @classmethod
    def _text(cls, value: Any, info: ValidationInfo) -> str | None:
        if info.field_name == "user":
            value = value or None  # an empty owner field: the requester
            if value is None:
                return None
        if not isinstance(value, str):
            raise invalid("name, client_type and user must be text")
        return value


def register(session: Session, principal: Principal, fields: ApplicationFields
             ) -> tuple[OAuthApplication, str | None]:
    """An application asked for by a staff member. Only superusers may name another owner:
    client_credentials tokens act as the owner."""
    username = fields.user
    if username is not None and username != principal.username and not principal.is_superuser:
        raise PermissionDenied("Only a superuser may register an application for another user")
    owner = user_named(session, username) if username else None
    return create_application(session, name=fields.name, user=owner,
                              client_type=fields.client_type, grant_types=fields.grant_types,
                              redirect_uris=fields.redirect_uris)


def list_applications(session: Session) -> list[dict[str, Any]]:
    """Every application as shown to administrators (never its secret, which is only hashed)."""
    rows = session.execute(select(OAuthApplication, User.username)
                           .outerjoin(User, User.id == OAuthApplication.user_id)
                           .order_by(OAuthApplication.id))
    return [application_record(application, owner) for application, owner in rows]


def application_record(application: OAuthApplication, owner: str | None) -> dict[str, Any]:
    return {
        "name": application.name,
        "client_id": application.client_id,
        "client_type": application.client_type,
        "grant_types": application.authorization_grant_type.split(),
        "redirect_uris": application.redirect_uris.split(),
        "user": owner,
        "created": application.created.isoformat() if application.created else None,
    }


def find_application(session: Session, client_id: str) -> OAuthApplication:
    application = session.scalar(select(OAuthApplication).where(OAuthApplication.client_id == client_id))
    if application is None:
        raise NotFound(f"No OAuth2 application with client id {client_id!r}")
    return application


def delete_application(session: Session, client_id: str) -> OAuthApplication:
    """Remove the application and every token issued through it."""
    application = find_application(session, client_id)
    session.execute(delete(AccessToken).where(AccessToken.application_id == application.id))
    session.delete(application)
    session.flush()
    return application


class Validator(RequestValidator):
    """oauthlib's questions, answered from the database of one request."""

    def __init__(self, session: Session, settings: Settings, address: str | None = None):
        self.session, self.settings = session, settings
        self.address = address  # the client's, for the failed-login lockout

    # -- clients --------------------------------------------------------------------------

    def _client(self, client_id: str | None) -> OAuthApplication | None:
        if not client_id:
            return None
        return self.session.scalar(select(OAuthApplication).where(OAuthApplication.client_id == client_id))

    @staticmethod
    def _basic(request) -> tuple[str, str] | None:
        header = request.headers.get("Authorization", "")
        scheme, _, value = header.partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return None
        client_id, sep, secret = decoded.partition(":")
        return (unquote_plus(client_id), unquote_plus(secret)) if sep else None

    def client_authentication_required(self, request, *args, **kwargs) -> bool:
        if self._basic(request) or request.client_secret:
            return True
        client = self._client(request.client_id)
        return client is None or client.client_type != "public"

    def authenticate_client(self, request, *args, **kwargs) -> bool:
        pair = self._basic(request) or (request.client_id, request.client_secret)
        client = self._client(pair[0])
        known = client is not None and client.client_type == "confidential" and bool(pair[1])
        stored = client.client_secret if known else _dummy_secret()  # same cost for unknown clients
        if not login_guard.verify(self.session, self.settings, username=f"client:{pair[0]}",
                                  address=self.address,
                                  check=lambda: auth.check_password(stored, pair[1] or "") and known):
            return False
        request.client, request.client_id = client, client.client_id
        return True

    def authenticate_client_id(self, client_id, request, *args, **kwargs) -> bool:
        client = self._client(client_id)
        if client is None or client.client_type != "public":
            return False
        request.client = client
        return True

    def validate_grant_type(self, client_id, grant_type, client, request, *args, **kwargs) -> bool:
        allowed = set(client.authorization_grant_type.split())
        if "password" in allowed:
            allowed.add("refresh_token")
        return grant_type in allowed

    # -- users and scopes -----------------------------------------------------------------

    def validate_user(self, username, password, client, request, *args, **kwargs) -> bool:
        user = self.session.scalar(select(User).where(User.username == username))
        if not auth.verify_login(self.session, self.settings, user, username, password, self.address):
            return False
        if not user.is_active:
            return False
        request.user = user
        return True

    def validate_scopes(self, client_id, scopes, client, request, *args, **kwargs) -> bool:
        return set(scopes) <= set(SCOPES)

    def get_default_scopes(self, client_id, request, *args, **kwargs) -> list[str]:
        return list(DEFAULT_SCOPES)

    # -- tokens ---------------------------------------------------------------------------

    def _token_row(self, token: str, *, refresh: bool) -> AccessToken | None:
        column = AccessToken.refresh_hash if refresh else AccessToken.token_hash
        return self.session.scalar(select(AccessToken).where(column == auth.digest(token)))

    def validate_refresh_token(self, refresh_token, client, request, *args, **kwargs) -> bool:
        row = self._token_row(refresh_token, refresh=True)
        if row is None or row.application_id != client.id or row.user_id is None:
            return False
        user = self.session.get(User, row.user_id)
        if user is None or not user.is_active:
            return False
        request.user, request.replaced_token = user, row
        return True

    def get_original_scopes(self, refresh_token, request, *args, **kwargs) -> list[str]:
        row = self._token_row(refresh_token, refresh=True)
        return row.scope.split() if row is not None else []

    def save_bearer_token(self, token, request, *args, **kwargs) -> None:
        """Store the token through ``issue_token``; its strings replace oauthlib's."""
        client: OAuthApplication = request.client
        user = getattr(request, "user", None)
        if request.grant_type == "client_credentials" and client.user_id is not None:
            user = self.session.get(User, client.user_id)
        replaced = getattr(request, "replaced_token", None)
        if replaced is not None:
            self.session.delete(replaced)
        access, refresh, _ = auth.issue_token(
            self.session, user, application_id=client.id, scope=token.get("scope", ""),
            lifetime=self.settings.ACCESS_TOKEN_EXPIRE_SECONDS,
            with_refresh="refresh_token" in token,
        )
        token["access_token"] = access
        if refresh is not None:
            token["refresh_token"] = refresh

    def revoke_token(self, token, token_type_hint, request, *args, **kwargs) -> None:
        digest = auth.digest(token)
        self.session.execute(delete(AccessToken).where(
            AccessToken.application_id == request.client.id,
            or_(AccessToken.token_hash == digest, AccessToken.refresh_hash == digest),
        ))


@cache
def _dummy_secret() -> str:
    """A hash to check unknown clients' secrets against, made on first use (hashing takes a
    moment, which importing this module should not)."""
    return auth.hash_password(secrets.token_hex(8))


class TokenServer(TokenEndpoint, RevocationEndpoint):
    """``/o/token`` (password, client_credentials, refresh_token) and ``/o/revoke_token``."""

    def __init__(self, validator: Validator, lifetime: int):
        bearer = BearerToken(validator, expires_in=lifetime)
        TokenEndpoint.__init__(self, default_grant_type="password", default_token_type=bearer,
                               grant_types={
                                   "password": ResourceOwnerPasswordCredentialsGrant(validator),
                                   "client_credentials": ClientCredentialsGrant(validator),
                                   "refresh_token": RefreshTokenGrant(validator),
                               })
        RevocationEndpoint.__init__(self, validator, supported_token_types=["access_token",
                                                                             "refresh_token"])


Answer = tuple[dict[str, str], str, int]


def token_response(session: Session, settings: Settings, uri: str, body: str,
                   headers: dict[str, str], address: str | None = None) -> Answer:
    server = TokenServer(Validator(session, settings, address), settings.ACCESS_TOKEN_EXPIRE_SECONDS)
    return server.create_token_response(uri, "POST", body, headers)


def revocation_response(session: Session, settings: Settings, uri: str, body: str,
                        headers: dict[str, str], address: str | None = None) -> Answer:
    server = TokenServer(Validator(session, settings, address), settings.ACCESS_TOKEN_EXPIRE_SECONDS)
    return server.create_revocation_response(uri, "POST", body, headers)


INVALID_TOKEN = {
    "error": "invalid_token",
    "error_description": "The access token provided is expired, revoked, malformed, "
                         "or invalid for other reasons.",
}


def userinfo(session: Session, settings: Settings, principal: Principal
             ) -> tuple[dict[str, Any], int, dict[str, str]]:
    """OIDC claims of the requester; anonymous (or a bad token) gets RFC 6750's 401."""
    user = principal.user
    if user is None:
        challenge = f'Bearer error="{INVALID_TOKEN["error"]}", ' \
                    f'error_description="{INVALID_TOKEN["error_description"]}"'
        return dict(INVALID_TOKEN), 401, {"WWW-Authenticate": challenge}
    names = list(session.scalars(
        select(Group.name).join(GroupMember, GroupMember.group_id == Group.id)
        .where(GroupMember.user_id == user.id, Group.internal.is_(False)).order_by(Group.name)))
    groups = [settings.REGISTERED_MEMBERS_GROUP_NAME, *names]
    if user.is_superuser:
        groups.append("admin")
    claims = {
        "sub": str(user.id),
        "name": f"{user.first_name} {user.last_name}".strip() or user.username,
        "given_name": user.first_name,
        "family_name": user.last_name,
        "email": user.email,
        "preferred_username": user.username,
        "groups": groups,
    }
    return claims, 200, {}

