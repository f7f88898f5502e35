"""cartotheca.api.site: each request's site URL, from how its client (or a trusted proxy) sent it.

Without SITEURL the URLs the service answers with (links, capabilities, status URLs ...) must
reach the server the way the client reached it: ``cartotheca serve --port 8811`` answers
``http://127.0.0.1:8811/...``, and behind a reverse proxy the proxy's public address. A proxy is
believed only when the connection comes from an address of FORWARDED_ALLOW_IPS; it then gives
the scheme (``X-Forwarded-Proto``), the host and port (``X-Forwarded-Host``) and the path it
serves the site under (``X-Forwarded-Prefix``). uvicorn's proxy middleware, with the same
trusted addresses, then puts the client's own address (``X-Forwarded-For``) and the scheme into
the request, so the server itself must run without its own proxy-header handling.
"""

from __future__ import annotations

import ipaddress
import re

from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from cartotheca import siteurl
from cartotheca.settings import Settings

# host, host:port, [v6], [v6]:port — what may stand between "://" and the path of a URL
HOST = re.compile(r"(?:[A-Za-z0-9_.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?")
PREFIX = re.compile(r"(?:/[A-Za-z0-9._~!$&'()*+,;=:@%-]+)*/?")


class TrustedProxies:
    """The addresses (IPs or CIDR blocks, ``*`` for any) whose forwarding headers are believed."""

    def __init__(self, entries: list[str]):
        self.any = "*" in entries
        self.networks = [ipaddress.ip_network(e, strict=False) for e in entries if e != "*"]

    def __contains__(self, host: str | None) -> bool:
        if host is None:
            return False
        if self.any:
            return True
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return False
        return any(address in network for network in self.networks)


def _headers(scope: Scope) -> dict[str, str]:
    """The first value of each header (a list from several proxies starts with the outermost)."""
    found: dict[str, str] = {}
    for name, value in scope["headers"]:
        key = name.decode("latin-1")
        if key not in found:
            found[key] = value.decode("latin-1").split(",")[0].strip()
    return found


def request_site(scope: Scope, trusted: TrustedProxies) -> str | None:
    """The site URL ("scheme://host[:port]/root/") the request was sent to, or None when its
    Host header cannot be part of a URL."""
    headers = _headers(scope)
    scheme = scope.get("scheme", "http")
    host = headers.get("host", "")
    root = scope.get("root_path", "").rstrip("/")
    client = scope.get("client")
    if client and client[0] in trusted:
        proto = headers.get("x-forwarded-proto", "").lower()
        if proto in ("http", "https"):
            scheme = proto
        forwarded_host = headers.get("x-forwarded-host", "")
        if forwarded_host and HOST.fullmatch(forwarded_host):
            host = forwarded_host
        prefix = headers.get("x-forwarded-prefix", "")
        if prefix.startswith("/") and PREFIX.fullmatch(prefix):
            root = prefix.rstrip("/")
    if not host:
        server = scope.get("server")
        if not server:
            return None
        host = f"{server[0]}:{server[1]}" if server[1] is not None else str(server[0])
    if not HOST.fullmatch(host):
        return None
    return f"{scheme}://{host}{root}/"


class SiteMiddleware:
    """Serve each request with ``cartotheca.siteurl`` set to the site URL it was sent to (only
    when SITEURL is not set), then apply a trusted proxy's client address and scheme."""

    def __init__(self, app: ASGIApp, settings: Settings):
        self.settings = settings
        self.trusted = TrustedProxies(settings.FORWARDED_ALLOW_IPS)
        self.app = ProxyHeadersMiddleware(app, trusted_hosts=settings.FORWARDED_ALLOW_IPS)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or siteurl.is_configured(self.settings):
            await self.app(scope, receive, send)
            return
        site = request_site(scope, self.trusted)
        if site is None:
            await PlainTextResponse("Bad Request: invalid Host header", status_code=400)(scope, receive, send)
            return
        with siteurl.serving(site):
            await self.app(scope, receive, send)
