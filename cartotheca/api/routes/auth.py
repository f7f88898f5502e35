"""cartotheca.api.routes.auth: OAuth2 token endpoints, OIDC userinfo, and cookie sessions."""

from __future__ import annotations

import logging
from typing import Annotated, Any

from fastapi import APIRouter, BackgroundTasks, Depends, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from cartotheca import mail, siteurl
from cartotheca.api.deps import (
    CSRF_COOKIE,
    SESSION_COOKIE,
    DbDep,
    PrincipalDep,
    SettingsDep,
    client_address,
    read_body,
)
from cartotheca.api.responses import JSON
from cartotheca.api.schemas.users import user_record
from cartotheca.catalogue import accounts, oauth, password_reset
from cartotheca.settings import Settings

BodyDep = Annotated[Any, Depends(read_body)]

router = APIRouter()
log = logging.getLogger(__name__)


async def _oauth_call(request: Request, db, settings, handler) -> Response:
    body = (await request.body()).decode("utf-8", errors="replace")
    # In a worker thread: a password grant hashes, and may wait for a password check slot.
    headers, text, status = await run_in_threadpool(
        handler, db, settings, str(request.url), body, dict(request.headers), client_address(request))
    db.commit()
    return Response(text or None, status_code=status, headers=headers,
                    media_type="application/json")


@router.post("/o/token", tags=["auth"], summary="OAuth2 token (password, client_credentials)")
async def token(request: Request, db: DbDep, settings: SettingsDep) -> Response:
    return await _oauth_call(request, db, settings, oauth.token_response)


@router.post("/o/revoke_token", tags=["auth"], summary="Revoke an access or refresh token")
async def revoke_token(request: Request, db: DbDep, settings: SettingsDep) -> Response:
    return await _oauth_call(request, db, settings, oauth.revocation_response)


def userinfo(db: DbDep, principal: PrincipalDep, settings: SettingsDep) -> JSON:
    claims, status, headers = oauth.userinfo(db, settings, principal)
    return JSON(claims, status_code=status, headers=headers)


# OIDC allows both methods; separate operation ids keep the schema valid.
router.get("/o/userinfo", tags=["auth"], summary="OIDC claims of the authenticated user",
           operation_id="userinfo_get")(userinfo)
router.post("/o/userinfo", tags=["auth"], summary="OIDC claims of the authenticated user",
            operation_id="userinfo_post")(userinfo)


@router.post("/account/login", tags=["auth"], summary="Open a cookie session")
def login(request: Request, db: DbDep, settings: SettingsDep, body: BodyDep) -> JSON:
    user, key, web = accounts.login(db, settings, body, client_address(request))
    db.commit()
    response = JSON({"user": user_record(user, None, siteurl.base(settings), show_perms=True)})
    secure = siteurl.url(settings).startswith("https://")
    age = settings.SESSION_COOKIE_AGE
    response.set_cookie(SESSION_COOKIE, key, max_age=age, httponly=True, samesite="lax",
                        secure=secure, path="/")
    # Readable by the pages' scripts, which echo it in X-CSRFToken on unsafe requests.
    response.set_cookie(CSRF_COOKIE, web.csrf_token, max_age=age, httponly=False,
                        samesite="lax", secure=secure, path="/")
    return response


@router.post("/account/logout", tags=["auth"], summary="Close the cookie session")
def logout(request: Request, db: DbDep, principal: PrincipalDep) -> JSON:
    # PrincipalDep has already checked the CSRF token of a cookie session.
    accounts.logout(db, request.cookies.get(SESSION_COOKIE))
    db.commit()
    response = JSON({"success": True})
    response.delete_cookie(SESSION_COOKIE, path="/")
    response.delete_cookie(CSRF_COOKIE, path="/")
    return response


@router.post("/account/signup", status_code=201, tags=["auth"], summary="Sign up")
def signup(db: DbDep, settings: SettingsDep, body: BodyDep) -> JSON:
    user = accounts.signup(db, settings, body)
    db.commit()
    record = user_record(user, None, siteurl.base(settings), show_perms=True)
    return JSON({"user": record, "pending_approval": not user.is_active}, status_code=201)


def _send_reset_mail(settings: Settings, message: password_reset.ResetMail) -> None:
    try:
        mail.send(settings, message.subject, message.body, [message.recipient])
    except Exception:  # the answer has gone: the operator sees why in the log
        log.exception("The password reset message to %s could not be sent", message.recipient)


@router.post("/account/password/reset", tags=["auth"], summary="E-mail a link to set a new password")
def request_password_reset(request: Request, db: DbDep, settings: SettingsDep, body: BodyDep,
                           tasks: BackgroundTasks) -> JSON:
    mails = password_reset.request_reset(db, settings, body, client_address(request),
                                         siteurl.base(settings))
    db.commit()
    # Sent after the answer: how long it takes must not tell whether an account has the address.
    for message in mails:
        tasks.add_task(_send_reset_mail, settings, message)
    return JSON({"detail": password_reset.REQUESTED})


@router.post("/account/password/reset/check", tags=["auth"], summary="Whether a reset link is usable")
def check_password_reset_key(db: DbDep, body: BodyDep) -> JSON:
    key = body.get("key") if isinstance(body, dict) else None
    return JSON({"username": password_reset.check_key(db, key)})


@router.post("/account/password/reset/key", tags=["auth"], summary="Set a new password with a reset link")
def reset_password(db: DbDep, settings: SettingsDep, body: BodyDep) -> JSON:
    password_reset.reset_password(db, settings, body)
    db.commit()
    return JSON({"success": True})
