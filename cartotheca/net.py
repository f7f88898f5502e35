"""cartotheca.net: the one way the service fetches a URL a client gave it.

A URL from a client (a remote document, an image) is fetched only when its host is allowed by
PROXY_ALLOWED_HOSTS, only over http(s), within TIMEOUT seconds in all, up to a byte limit read as
the body streams in, and never from loopback, link-local, private or otherwise non-global
addresses. The name is resolved here and the connection made to the address that was checked
(TLS still verifies the name), so DNS cannot answer one address to the check and another to the
connection; every redirect is checked the same way before it is followed.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from urllib.parse import quote, urljoin, urlsplit

from cartotheca.errors import InvalidInput
from cartotheca.settings import Settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
AddressPolicy = Callable[[IPAddress], bool]
MAX_REDIRECTS = 5
MAX_URL_LENGTH = 2048
CHUNK = 64 * 1024
REDIRECTS = (301, 302, 303, 307, 308)
PRINTABLE = "".join(chr(c) for c in range(0x21, 0x7F))
NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # IPv4 addresses reached through a NAT64 gateway
USER_AGENT = "Cartotheca"
# getaddrinfo has no timeout of its own; lookups run here so a caller can stop waiting.
_resolver = ThreadPoolExecutor(max_workers=4, thread_name_prefix="resolver")


class URLRefused(InvalidInput):
    """The URL may not be fetched (scheme, host not allowed, a non-public address)."""

    code = "url_not_allowed"


class FetchFailed(InvalidInput):
    """The URL could not be fetched (unreachable, timeout, HTTP error, too large)."""

    code = "remote_fetch_failed"


@dataclass(frozen=True)
class Fetched:
    url: str  # after redirects
    content_type: str
    body: bytes


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str
    port: int
    path: str  # path and query, as sent in the request line


# -- rules ------------------------------------------------------------------------------------


def is_public_address(address: IPAddress) -> bool:
    """A globally routable unicast address; addresses that embed an IPv4 one (mapped, 6to4,
    Teredo) are judged by it, so ``::ffff:127.0.0.1`` is loopback."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour or (address.teredo or (None, None))[1]
        if embedded is None and address in NAT64:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None:
            return is_public_address(embedded)
    return address.is_global and not address.is_multicast


def host_allowed(host: str, allowed: Iterable[str]) -> bool:
    """PROXY_ALLOWED_HOSTS: ``*`` allows every host, ``.example.org`` the domain and its
    subdomains, anything else that exact host (case and a trailing dot ignored)."""
    host = host.lower().rstrip(".")
    for rule in allowed:
        rule = rule.strip().lower().rstrip(".")
        if rule == "*":
            return True
        if rule.startswith("."):
            if host == rule[1:] or host.endswith(rule):
                return True
        elif rule and host == rule.strip("[]"):
            return True
    return False


def parse_url(url: str) -> Target:
    """An absolute http(s) URL without credentials, split for a request; URLRefused otherwise."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL_LENGTH:
        raise URLRefused("The URL must be an http(s) URL of at most 2048 characters")
    if any(ord(c) < 0x21 or ord(c) == 0x7f for c in url):
        raise URLRefused("The URL must not contain spaces or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise URLRefused("The URL is not valid") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise URLRefused("Only http and https URLs are accepted")
    if parts.username is not None or parts.password is not None:
        raise URLRefused("URLs with credentials are not accepted")
    scheme = parts.scheme.lower()
    try:
        # internationalised names travel as punycode (DNS, the Host header, TLS)
        host = parts.hostname.encode("idna").decode("ascii").lower()
    except UnicodeError:
        raise URLRefused("The URL's host name is not valid") from None
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    path = quote(path, safe=PRINTABLE)  # non-ASCII characters as UTF-8 percent escapes
    return Target(scheme, host, port or (443 if scheme == "https" else 80), path)


def literal_address(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def resolve(host: str, port: int, timeout: float) -> list[IPAddress]:
    """The addresses ``host`` resolves to; FetchFailed when it does not within ``timeout``."""
    literal = literal_address(host)
    if literal is not None:
        return [literal]
    future = _resolver.submit(socket.getaddrinfo, host, port, type=socket.SOCK_STREAM)
    try:
        infos = future.result(timeout=max(timeout, 0.01))
    except FutureTimeout:
        raise FetchFailed(f"Resolving {host} took too long") from None
    except (OSError, UnicodeError):
        raise FetchFailed(f"The host {host} cannot be resolved") from None
    addresses = []
    for _family, _type, _proto, _canon, sockaddr in infos:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise FetchFailed(f"The host {host} cannot be resolved")
    return addresses


def checked_addresses(host: str, port: int, timeout: float,
                      policy: AddressPolicy = is_public_address) -> list[IPAddress]:
    """Every address of ``host``, refused if any of them fails ``policy``: a name that also
    points inward is not fetched whichever address a connection would pick."""
    host = host.rstrip(".")
    if host in ("localhost", "localhost.localdomain") or host.endswith(".localhost"):
        raise URLRefused("URLs to this server's own host are not accepted")
    addresses = resolve(host, port, timeout)
    refused = [a for a in addresses if not policy(a)]
    if refused:
        raise URLRefused(f"{host} resolves to a loopback, private, link-local or reserved address "
                         f"({refused[0]})")
    return addresses


def check_link(url: str, settings: Settings) -> None:
    """A URL kept as a link (never fetched now): refused when it names this host, a literal
    non-public address or a name resolving to one. A name that cannot be resolved is accepted:
    it is only a link, and fetching it later goes through ``fetch`` and its checks again."""
    target = parse_url(url)
    try:
        checked_addresses(target.host, target.port, float(settings.TIMEOUT))
    except FetchFailed:
        return


# -- fetching ---------------------------------------------------------------------------------


class _PinnedHTTP(http.client.HTTPConnection):
    """An HTTP connection to a checked address; the Host header still names the host."""

    def __init__(self, host: str, port: int, address: IPAddress, timeout: float):
        super().__init__(host, port, timeout=timeout)
        self.address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((str(self.address), self.port), self.timeout)


class _PinnedHTTPS(http.client.HTTPSConnection):
    """An HTTPS connection to a checked address; the certificate is verified for the host."""

    def __init__(self, host: str, port: int, address: IPAddress, timeout: float):
        super().__init__(host, port, timeout=timeout, context=ssl.create_default_context())
        self.address = address

    def connect(self) -> None:
        sock = socket.create_connection((str(self.address), self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)


def fetch(url: str, settings: Settings, *, max_bytes: int,
          policy: AddressPolicy = is_public_address) -> Fetched:
    """GET ``url`` by the rules of this module; the whole exchange, redirects included, ends
    within TIMEOUT seconds. ``policy`` decides which resolved addresses may be contacted."""
    deadline = time.monotonic() + float(settings.TIMEOUT)
    for _ in range(MAX_REDIRECTS + 1):
        target = parse_url(url)
        if not host_allowed(target.host, settings.PROXY_ALLOWED_HOSTS):
            raise URLRefused(f"The host {target.host} is not in PROXY_ALLOWED_HOSTS")
        addresses = checked_addresses(target.host, target.port, _remaining(deadline), policy)
        status, location, content_type, body = _get(target, addresses, deadline, max_bytes)
        if status in REDIRECTS:
            if not location:
                raise FetchFailed(f"{url} answered a redirect without a Location")
            url = urljoin(url, location)
            continue
        if status != 200:
            raise FetchFailed(f"{url} answered HTTP {status}")
        return Fetched(url, content_type, body)
    raise FetchFailed(f"More than {MAX_REDIRECTS} redirects")


def _remaining(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise FetchFailed("The remote server took too long to answer")
    return left


def _get(target: Target, addresses: Sequence[IPAddress], deadline: float,
         max_bytes: int) -> tuple[int, str | None, str, bytes]:
    kind = _PinnedHTTPS if target.scheme == "https" else _PinnedHTTP
    last_error: Exception | None = None
    for address in addresses:
        connection = kind(target.host, target.port, address, _remaining(deadline))
        watchdog = None
        try:
            connection.connect()
            # the connection lets go of its socket when the response closes it: keep it here
            sock = connection.sock
            # A server trickling its headers a byte at a time never trips a socket timeout:
            # at the deadline the socket is shut, whatever is being read.
            watchdog = threading.Timer(_remaining(deadline), _shut, args=(sock,))
            watchdog.daemon = True
            watchdog.start()
            connection.request("GET", target.path, headers={
                "User-Agent": USER_AGENT, "Accept": "*/*", "Accept-Encoding": "identity"})
            response = connection.getresponse()
            if response.status in REDIRECTS:
                return response.status, response.getheader("Location"), "", b""
            if response.status != 200:
                return response.status, None, "", b""
            body = _read(sock, response, deadline, max_bytes)
            return 200, None, response.getheader("Content-Type") or "", body
        except (OSError, http.client.HTTPException) as exc:
            last_error = exc
            if isinstance(exc, ssl.SSLError):
                break  # another address of the same host will not hold another certificate
        finally:
            if watchdog is not None:
                watchdog.cancel()
            connection.close()
        _remaining(deadline)  # a shut socket reads as an error: say it was the time limit
    raise FetchFailed(f"{target.host} could not be reached ({type(last_error).__name__})")


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _read(sock: socket.socket, response: http.client.HTTPResponse, deadline: float,
          max_bytes: int) -> bytes:
    header = (response.getheader("Content-Length") or "").strip()
    declared = int(header) if header.isdigit() else None
    if declared is not None and declared > max_bytes:
        raise FetchFailed(f"The remote file is larger than {max_bytes} bytes")
    chunks, size = [], 0
    while True:
        sock.settimeout(_remaining(deadline))
        # read1: at most one receive, so a server sending a byte at a time meets the deadline
        chunk = response.read1(CHUNK)
        if not chunk:
            _remaining(deadline)  # an end caused by the watchdog is a timeout, not the body's end
            if declared is not None and size < declared:
                raise FetchFailed("The remote server closed the connection before the end")
            return b"".join(chunks)
        size += len(chunk)
        if size > max_bytes:
            raise FetchFailed(f"The remote file is larger than {max_bytes} bytes")
        chunks.append(chunk)
