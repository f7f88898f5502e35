"""cartotheca.siteurl: the site URL every outgoing absolute URL is built from.

When SITEURL is set (argument, environment or settings file) it is the site URL, always. When it
is not, each request is answered with URLs to where its client sent it: the middleware in
``cartotheca.api.site`` records the request's base (scheme, host, port and root path, or a
trusted proxy's ``X-Forwarded-*``) in a context variable for the time the request is served.
Work done without a request (execution workers, the notification thread, the CLI) falls back to
SITEURL's value; what it stores is addressed under the request's base again on output
(``cartotheca.catalogue.links.rebased``).

The variable follows the request into the threads it uses: AnyIO's ``to_thread`` (Starlette's
thread pool) runs each call in a copy of the caller's context.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol
from urllib.parse import urlsplit


class HasSiteURL(Protocol):
    SITEURL: str

    @property
    def model_fields_set(self) -> set[str]: ...


_request_site: ContextVar[str | None] = ContextVar("cartotheca_request_site", default=None)


def is_configured(settings: HasSiteURL) -> bool:
    """True when SITEURL was given explicitly, rather than left at its default."""
    return "SITEURL" in settings.model_fields_set


def url(settings: HasSiteURL) -> str:
    """The site URL, ending in "/": SITEURL when set, else the current request's base, else
    SITEURL's default (no request in flight)."""
    if is_configured(settings):
        return settings.SITEURL
    return _request_site.get() or settings.SITEURL


def base(settings: HasSiteURL) -> str:
    """``url`` without the trailing slash, for joining absolute paths."""
    return url(settings).rstrip("/")


def path(settings: HasSiteURL) -> str:
    """The path the site is served under, without the trailing slash ("" at the root)."""
    return urlsplit(url(settings)).path.rstrip("/")


def stored_base(settings: HasSiteURL) -> str:
    """The base that work without a request writes into what it stores (SITEURL's value)."""
    return settings.SITEURL


def of_request() -> str | None:
    """The base of the request in flight, or None (no request, or outside its context). Kept
    with what is sent later on the request's behalf (notices)."""
    return _request_site.get()


@contextmanager
def serving(site: str) -> Iterator[None]:
    """Within the block, the current request was addressed to ``site`` (ending in "/")."""
    token = _request_site.set(site)
    try:
        yield
    finally:
        _request_site.reset(token)
