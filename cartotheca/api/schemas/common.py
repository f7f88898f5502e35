"""cartotheca.api.schemas.common: the GeoNode list envelope, links and value formats."""

from __future__ import annotations

import datetime as dt
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request

from cartotheca import siteurl


def iso(value: dt.datetime | None) -> str | None:
    """GeoNode's datetime form: UTC, microseconds, ``Z`` suffix."""
    if value is None:
        return None
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def page_link(request: Request, page: int | None) -> str | None:
    """The same request URL with ``page`` replaced; page 1 drops the parameter (DRF). Under
    the site URL, as every other link (the request's own when SITEURL is not set)."""
    if page is None:
        return None
    site = siteurl.base(request.app.state.cartotheca.settings)
    items = [(k, v) for k, v in request.query_params.multi_items() if k != "page"]
    if page > 1:
        items.append(("page", str(page)))
    items.sort(key=lambda kv: kv[0])
    return site + request.url.path + ("?" + _encode(items) if items else "")


def _encode(items: list[tuple[str, str]]) -> str:
    return urlencode(items)


def envelope(request: Request, key: str, items: list[Any], *, total: int | None, page: int,
             page_size: int | None, has_next: bool | None = None) -> dict[str, Any]:
    """GeoNode's list envelope. ``total`` is None only for an uncounted resource page
    (``total=false``), whose ``has_next`` then says whether a next page exists."""
    if total is None:
        more = bool(has_next)
    else:
        more = page < (1 if not page_size else max(1, -(-total // page_size)))
    return {
        "links": {
            "next": page_link(request, page + 1) if more else None,
            "previous": page_link(request, page - 1) if page > 1 else None,
        },
        "total": total,
        "page": page,
        "page_size": page_size if page_size is not None else total,
        key: items,
    }
