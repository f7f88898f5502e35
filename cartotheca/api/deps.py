"""cartotheca.api.deps: request dependencies (database session, principal, settings, body)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Annotated, Any
from urllib.parse import parse_qsl

import anyio.to_thread
import orjson
from fastapi import Depends, Query, Request
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from cartotheca import xmlsafe
from cartotheca.api.bulkhead import Bulkhead
from cartotheca.api.loop_limiter import LoopLimiter
from cartotheca.catalogue import auth, query
from cartotheca.catalogue.auth import InternalGroups, Principal
from cartotheca.catalogue.kinds import Kinds
from cartotheca.catalogue.query import ListContext
from cartotheca.catalogue.query.paging import ExactCounts
from cartotheca.errors import (
    AuthenticationFailed,
    NotAuthenticated,
    ParseError,
    PermissionDenied,
    UnsupportedMediaType,
)
from cartotheca.settings import Settings

SESSION_COOKIE = "cartotheca_session"
CSRF_COOKIE = "csrftoken"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})


# Closing a session is one ROLLBACK: quick, but blocking, and a database that hangs must not
# freeze the event loop; these few threads do it without queueing behind request work.
CLOSING_THREADS = 8


@dataclass
class AppState:
    settings: Settings
    engine: Engine
    sessions: sessionmaker[Session]
    groups: InternalGroups
    exempt: list[re.Pattern[str]]
    tasks: Any = None  # cartotheca.tasks.engine.Engine
    kinds: Kinds | None = None  # the resource kinds, with the map server's thumbnail drawer
    bulkhead: Bulkhead | None = None  # heavy map-server requests at once (None: no bound)
    read_sessions: sessionmaker[Session] | None = None  # autocommit: for routes that only read
    counts: ExactCounts | None = None  # exact totals and facets from the catalogue index
    # Threads that only close sessions still holding a connection (``close_session``).
    closing_lane: LoopLimiter = field(default_factory=lambda: LoopLimiter(CLOSING_THREADS))


async def close_session(request: Request, session: Session) -> None:
    """End ``session``: on the event loop when it holds no connection (nothing to send), else
    in the closing lane, so its connection goes back at once and the loop never blocks."""
    if not session.in_transaction():
        session.close()
        return
    await anyio.to_thread.run_sync(session.close, limiter=app_state(request).closing_lane.current())


def app_state(request: Request) -> AppState:
    return request.app.state.cartotheca


@asynccontextmanager
async def heavy_work(request: Request) -> AsyncIterator[None]:
    """Hold one of the process's slots for map-server work (``api.bulkhead``) for the block;
    raises ``Overloaded`` when none is free in time."""
    bulkhead = app_state(request).bulkhead
    if bulkhead is None:
        yield
        return
    async with bulkhead.slot():
        yield


def get_settings(request: Request) -> Settings:
    return app_state(request).settings


async def settings_of(request: Request) -> Settings:
    """``get_settings`` as a dependency, resolved on the event loop (no trip to a thread)."""
    return get_settings(request)


async def get_kinds(request: Request) -> Kinds:
    kinds = app_state(request).kinds
    if kinds is None:
        raise RuntimeError("the app was built without the resource kinds")
    return kinds


KindsDep = Annotated[Kinds, Depends(get_kinds)]


async def get_db(request: Request) -> AsyncIterator[Session]:
    """The request's catalogue session. Use it through ``DbDep``: its scope ends the session
    (and returns its connection) when the route function returns, before the response body
    is sent, so a client that reads slowly or not at all holds no database connection.
    A streamed body must therefore read what it needs from the catalogue before it starts.

    Made and closed on the event loop, not in a worker thread: under load every trip to the
    thread pool waits its turn behind the other requests' work, and a session closed by a trip
    of its own stayed "idle in transaction", holding its pooled connection, through that wait.
    Making a session touches nothing; closing one that still holds a connection is a ROLLBACK,
    sent from the closing lane (``close_session``)."""
    session = app_state(request).sessions()
    try:
        yield session
    finally:
        await close_session(request, session)


DbDep = Annotated[Session, Depends(get_db, scope="function")]


async def get_read_db(request: Request) -> AsyncIterator[Session]:
    """A session for a route that only reads: ``get_db``'s, but each statement commits on its
    own, so no transaction stays open while the route serialises what it read."""
    state = app_state(request)
    session = (state.read_sessions or state.sessions)()
    try:
        yield session
    finally:
        await close_session(request, session)


ReadDbDep = Annotated[Session, Depends(get_read_db, scope="function")]


async def get_principal(request: Request, db: DbDep) -> Principal:
    """Basic, Bearer (header or ``access_token`` parameter) or the session cookie.

    A request with no credentials is anonymous without a trip to the thread pool. One with
    credentials is looked up in a worker thread, and the lookup's transaction ends there:
    the connection goes back to the pool while the request waits for its next thread."""
    cached = getattr(request.state, "principal", None)
    if cached is not None:
        return cached
    if _sends_credentials(request):
        return await run_in_threadpool(_identified, request, db)
    return principal_of(request, db)


def _sends_credentials(request: Request) -> bool:
    return bool(request.headers.get("authorization") or request.query_params.get("access_token")
                or request.cookies.get(SESSION_COOKIE))


def _identified(request: Request, db: Session) -> Principal:
    principal = principal_of(request, db)
    db.commit()  # not a rollback: that would expire the user just loaded
    return principal


def principal_of(request: Request, db: Session) -> Principal:
    """The requester, in the calling thread (a blocking lookup unless it sends no credentials)."""
    cached = getattr(request.state, "principal", None)
    if cached is not None:
        return cached
    state = app_state(request)
    principal = _identify(request, db, state)
    if principal.user is None and state.settings.LOCKDOWN_GEONODE:
        path = request.url.path
        if not any(p.match(path) for p in state.exempt):
            raise NotAuthenticated()
    request.state.principal = principal
    return principal


def _identify(request: Request, db: Session, state: AppState) -> Principal:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    scheme = scheme.lower()
    if scheme == "basic":
        user, memberships = auth.user_from_basic(db, value, state.settings, client_address(request))
        return auth.principal_for(db, user, state.groups, "basic", memberships=memberships)
    token = value if scheme == "bearer" else request.query_params.get("access_token")
    if header and scheme not in ("basic", "bearer"):
        raise AuthenticationFailed("Unsupported authorization scheme.")
    if token:
        user, scopes = auth.user_from_bearer(db, token)
        if user is not None:
            return auth.principal_for(db, user, state.groups, "bearer", scopes)
        return auth.anonymous(state.groups)
    key = request.cookies.get(SESSION_COOKIE)
    if key:
        user, web = auth.user_from_session(db, key)
        if user is not None and web is not None:
            if request.method not in SAFE_METHODS:
                sent = request.headers.get("x-csrftoken") or request.headers.get("x-csrf-token")
                if not sent or sent != web.csrf_token:
                    raise PermissionDenied("CSRF Failed: CSRF token missing or incorrect.")
            return auth.principal_for(db, user, state.groups, "session")
    return auth.anonymous(state.groups)


def client_address(request: Request) -> str | None:
    """The client's address (behind a trusted proxy, the one it forwarded: FORWARDED_ALLOW_IPS)."""
    return request.client.host if request.client else None


async def require_user(principal: Annotated[Principal, Depends(get_principal)]) -> Principal:
    if principal.user is None:
        raise NotAuthenticated()
    return principal


async def require_staff(principal: Annotated[Principal, Depends(require_user)]) -> Principal:
    if not principal.is_staff:
        raise PermissionDenied()
    return principal


async def read_body(request: Request) -> Any:
    """JSON, form-encoded or multipart bodies, as GeoNode's parsers accept them. Any text in
    them that could not be stored or written into XML later is refused here, naming its field."""
    body = await _parse_body(request)
    xmlsafe.check_text(body, "")
    return body


async def _parse_body(request: Request) -> Any:
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    raw = await request.body()
    if not raw.strip():
        return {}
    if content_type in ("", "application/json", "text/json") or content_type.endswith("+json"):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
    if content_type == "application/x-www-form-urlencoded":
        try:
            # strict: a percent-escaped invalid byte must not become U+FFFD silently
            pairs = parse_qsl(raw.decode("utf-8"), keep_blank_values=True, errors="strict")
        except UnicodeDecodeError:
            raise ParseError("Form data is not valid UTF-8") from None
        return _form_values(pairs)
    if content_type == "multipart/form-data":
        form = await request.form()
        return _form_values(form.multi_items())
    raise UnsupportedMediaType(f'Unsupported media type "{content_type}" in request.')


def _form_values(items) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in items:
        if key in out:
            existing = out[key]
            out[key] = existing + [value] if isinstance(existing, list) else [existing, value]
        else:
            out[key] = value
    return out


async def list_query_params(
    page: Annotated[str | None, Query(description="page number, or 'last'")] = None,
    page_size: Annotated[str | None, Query(description="items per page")] = None,
    search: Annotated[str | None, Query(description="free text")] = None,
    search_fields: Annotated[list[str] | None, Query()] = None,
    sort: Annotated[list[str] | None, Query(alias="sort[]", description="field or -field")] = None,
    ordering: Annotated[str | None, Query(description="alias of sort[] (comma-separated)")] = None,
) -> None:
    """Documents the list parameters every collection takes; ``list_context`` reads them."""


def list_context(request: Request, db: Session, principal: Principal) -> ListContext:
    query.check_utf8(request.scope.get("query_string", b""))
    items = request.query_params.multi_items()
    params: dict[str, list[str]] = {}
    for key, value in items:
        params.setdefault(key, []).append(value)
    state = app_state(request)
    return ListContext(db, principal, state.settings, params, items, state.counts)


PrincipalDep = Annotated[Principal, Depends(get_principal)]
UserDep = Annotated[Principal, Depends(require_user)]
StaffDep = Annotated[Principal, Depends(require_staff)]
SettingsDep = Annotated[Settings, Depends(settings_of)]
