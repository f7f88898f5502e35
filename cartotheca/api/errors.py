"""cartotheca.api.errors: the one table from domain exceptions to status codes and GeoNode bodies.

Every error body is ``{"success": false, "errors": [...], "code": ...}``; 404s add
``"detail": "Not found."`` so clients reading either GeoNode form work. 401s carry a Basic
challenge (GeoNode 5.x).
"""

from __future__ import annotations

import logging

import pydantic
import sqlalchemy.exc
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from cartotheca import errors
from cartotheca.api.responses import JSON
from cartotheca.db.session import RETRY_AFTER_SECONDS, UNAVAILABLE

log = logging.getLogger("cartotheca.api")

STATUS = {
    errors.ParseError: 400,
    errors.InvalidQuery: 400,
    errors.InvalidInput: 400,
    errors.LimitExceeded: 400,
    errors.NotAuthenticated: 401,
    errors.AuthenticationFailed: 401,
    errors.PermissionDenied: 403,
    errors.NotFound: 404,
    errors.MethodNotAllowed: 405,
    errors.Conflict: 409,
    errors.UnsupportedMediaType: 415,
    errors.TooManyAttempts: 429,
    errors.Busy: 503,
}

HTTP_CODES = {
    400: "invalid", 401: "not_authenticated", 403: "permission_denied", 404: "not_found",
    405: "method_not_allowed", 406: "not_acceptable", 413: "request_entity_too_large",
    415: "unsupported_media_type", 429: "throttled", 503: "service_unavailable",
}

CHALLENGE = {"WWW-Authenticate": 'Basic realm="api"'}


def status_of(exc: errors.CartothecaError) -> int:
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 500


def error_body(status: int, messages: list[str], code: str) -> dict:
    body = {"success": False, "errors": messages, "code": code}
    if status == 404:
        body["detail"] = messages[0] if messages and messages[0] != "Invalid page." else "Not found."
        if messages and messages[0] == "Invalid page.":
            body["detail"] = "Invalid page."
    return body


def error_response(status: int, messages: list[str], code: str) -> JSON:
    headers = CHALLENGE if status == 401 else None
    return JSON(error_body(status, messages, code), status_code=status, headers=headers)


async def _domain(_: Request, exc: errors.CartothecaError) -> JSON:
    response = error_response(status_of(exc), exc.messages, exc.code)
    retry_after = getattr(exc, "retry_after", None)
    if retry_after is not None:
        response.headers["Retry-After"] = str(retry_after)
    return response


async def _validation(_: Request, exc: RequestValidationError) -> JSON:
    messages = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err.get("loc", ()) if p not in ("body", "query", "path"))
        messages.append(f"{where}: {err.get('msg')}" if where else str(err.get("msg")))
    return error_response(400, messages or ["Invalid input."], "invalid")


async def _body(_: Request, exc: pydantic.ValidationError) -> JSON:
    """A request body a model refused: GeoNode's 400 with the first error, whose message names
    the field (the models word it so), as the field-by-field checks answered."""
    messages = [_message(err) for err in exc.errors()[:1]]
    return error_response(400, messages or ["Invalid input."], "invalid")


def _message(err: dict) -> str:
    if err.get("type") == "invalid":  # the models' own messages, already naming the field
        return str(err.get("msg"))
    where = ".".join(str(p) for p in err.get("loc", ()))
    return f"{where}: {err.get('msg')}" if where else str(err.get("msg"))


async def _http(_: Request, exc: StarletteHTTPException) -> JSON:
    status = exc.status_code
    message = exc.detail if isinstance(exc.detail, str) else "Error"
    if status == 404:
        message = "Not found."
    elif status == 405:
        message = "Method not allowed."
    response = error_response(status, [message], HTTP_CODES.get(status, "error"))
    if exc.headers:
        response.headers.update(exc.headers)
    return response


async def _unexpected(request: Request, exc: Exception) -> JSON:
    """500. The exception still reaches uvicorn after this answer, and uvicorn then closes the
    connection; ``Connection: close`` tells the client so, instead of letting it send its next
    request on a keep-alive connection that is gone (a connection reset)."""
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    response = error_response(500, ["A server error occurred."], "error")
    response.headers["Connection"] = "close"
    return response


async def _database_unavailable(request: Request, exc: Exception) -> JSON:
    """The database is down, dropped the connection or has no free pooled connection: the
    request may well succeed a moment later, so 503 with Retry-After rather than a 500."""
    log.warning("database unavailable on %s %s: %s", request.method, request.url.path, exc)
    response = error_response(503, ["The service is temporarily unavailable; try again later."],
                              HTTP_CODES[503])
    response.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


NUL_MESSAGE = "Text may not contain NUL (0x00) characters."


async def _data_error(request: Request, exc: Exception) -> JSON:
    if is_nul_in_text(exc):
        return error_response(400, [NUL_MESSAGE], "invalid")
    return await _unexpected(request, exc)


def is_nul_in_text(exc: BaseException) -> bool:
    """PostgreSQL refuses NUL characters in text; the driver says so when binding a value a
    client sent (a path, a query parameter, a field, a user name). That is bad input, not a
    server fault. SQLite stores such text, so only this case needs catching."""
    seen: BaseException | None = exc
    while seen is not None:
        if "NUL (0x00)" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def add_exception_handlers(app: FastAPI) -> None:
    app.add_exception_handler(errors.CartothecaError, _domain)
    app.add_exception_handler(RequestValidationError, _validation)
    app.add_exception_handler(pydantic.ValidationError, _body)
    app.add_exception_handler(StarletteHTTPException, _http)
    app.add_exception_handler(sqlalchemy.exc.DataError, _data_error)
    for unavailable in UNAVAILABLE:
        app.add_exception_handler(unavailable, _database_unavailable)
    app.add_exception_handler(Exception, _unexpected)
