"""cartotheca.net against a real HTTP server on this machine.

The server listens on 127.0.0.1, which the default address policy refuses; the fetching tests
pass a policy that admits exactly 127.0.0.1, so everything else (resolution, the allowed-host
rules, redirects to other addresses, the size cap, the time limit) runs as in production.
"""

from __future__ import annotations

import ipaddress
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from cartotheca import net
from cartotheca.catalogue import documents
from cartotheca.settings import Settings
from tests.api.routes.document_samples import pdf_bytes

LOOPBACK = ipaddress.ip_address("127.0.0.1")


def only_loopback(address) -> bool:
    return address == LOOPBACK


@pytest.mark.parametrize("address,public", [
    ("8.8.8.8", True), ("93.184.215.14", True), ("2001:4860:4860::8888", True),
    ("127.0.0.1", False), ("127.5.6.7", False), ("10.0.0.1", False), ("172.16.0.1", False),
    ("172.31.255.255", False), ("192.168.1.1", False), ("169.254.169.254", False),
    ("100.64.0.1", False), ("0.0.0.0", False), ("255.255.255.255", False), ("224.0.0.1", False),
    ("192.0.2.1", False), ("198.18.0.1", False), ("::1", False), ("::", False), ("fe80::1", False),
    ("fc00::1", False), ("fd12:3456::1", False), ("::ffff:127.0.0.1", False),
    ("::ffff:8.8.8.8", True), ("2002:7f00:1::1", False), ("2002:a00:1::1", False),
    ("ff02::1", False), ("64:ff9b::a00:1", False),
])
def test_public_addresses(address, public):
    assert net.is_public_address(ipaddress.ip_address(address)) is public


@pytest.mark.parametrize("host,rules,allowed", [
    ("example.org", ["example.org"], True),
    ("EXAMPLE.org.", ["example.org"], True),
    ("sub.example.org", ["example.org"], False),
    ("sub.example.org", [".example.org"], True),
    ("example.org", [".example.org"], True),
    ("badexample.org", [".example.org"], False),
    ("example.org.evil.com", [".example.org"], False),
    ("anything.net", ["*"], True),
    ("anything.net", [], False),
    ("127.0.0.1", ["127.0.0.1"], True),
    ("::1", ["[::1]"], True),
])
def test_allowed_host_rules(host, rules, allowed):
    assert net.host_allowed(host, rules) is allowed


@pytest.mark.parametrize("url", [
    "ftp://example.org/a", "file:///etc/passwd", "gopher://example.org/", "http://",
    "http://user:pw@example.org/", "http://exa mple.org/", "http://example.org/\r\nHost: x",
    "//example.org/a", "http://example.org:99999/", "x" * 3000, "",
])
def test_urls_that_are_never_fetched(url):
    with pytest.raises(net.URLRefused):
        net.parse_url(url)


def settings_for(tmp_path, **values) -> Settings:
    return Settings(DATA_DIR=tmp_path, **values)


def test_links_to_this_host_or_inward_addresses_are_refused(tmp_path):
    settings = settings_for(tmp_path, TIMEOUT=2)
    for url in ("http://127.0.0.1/a.pdf", "http://localhost:8000/a", "http://LOCALHOST./a",
                "http://app.localhost/a", "http://10.0.0.7/a", "http://[fe80::1]/a",
                "http://169.254.169.254/latest"):
        with pytest.raises(net.URLRefused):
            net.check_link(url, settings)
    net.check_link("http://93.184.215.14/a.pdf", settings)
    # a name that does not resolve is only a link: accepted now, checked again if ever fetched
    net.check_link("http://no-such-host.invalid/a.pdf", settings)


class Handler(BaseHTTPRequestHandler):
    routes: dict = {}

    def log_message(self, *_args) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        action = self.routes.get(self.path)
        if action is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        action(self)


def send(body: bytes, content_type: str = "application/octet-stream", length: bool = True):
    def respond(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", content_type)
        if length:
            handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)
        if not length:
            handler.close_connection = True
    return respond


def redirect(location: str):
    def respond(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(302)
        handler.send_header("Location", location)
        handler.send_header("Content-Length", "0")
        handler.end_headers()
    return respond


def dribble(handler: BaseHTTPRequestHandler) -> None:
    handler.send_response(200)
    handler.send_header("Content-Length", "1000")
    handler.end_headers()
    for _ in range(50):
        try:
            handler.wfile.write(b"x")
            handler.wfile.flush()
        except OSError:
            return
        time.sleep(0.2)


def silent(handler: BaseHTTPRequestHandler) -> None:
    time.sleep(4)


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    port = httpd.server_address[1]
    base = f"http://127.0.0.1:{port}"
    Handler.routes = {
        "/a.pdf": send(pdf_bytes(), "application/pdf"),
        "/big": send(b"y" * 5000),
        "/big-unannounced": send(b"z" * 5000, length=False),
        "/hop": redirect("/a.pdf"),
        "/elsewhere": redirect(f"http://127.0.0.2:{port}/a.pdf"),
        "/other-host": redirect(f"http://localhost:{port}/a.pdf"),
        "/loop": redirect("/loop"),
        "/slow": dribble,
        "/silent": silent,
    }
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield base
    httpd.shutdown()
    httpd.server_close()


def test_fetch_from_an_allowed_host(server, tmp_path):
    settings = settings_for(tmp_path, PROXY_ALLOWED_HOSTS=["127.0.0.1"], TIMEOUT=3)
    fetched = net.fetch(f"{server}/a.pdf", settings, max_bytes=100_000, policy=only_loopback)
    assert fetched.body == pdf_bytes() and fetched.content_type == "application/pdf"
    hopped = net.fetch(f"{server}/hop", settings, max_bytes=100_000, policy=only_loopback)
    assert hopped.body == pdf_bytes() and hopped.url == f"{server}/a.pdf"


def test_the_default_policy_refuses_this_machine(server, tmp_path):
    settings = settings_for(tmp_path, PROXY_ALLOWED_HOSTS=["*"], TIMEOUT=3)
    with pytest.raises(net.URLRefused, match="loopback"):
        net.fetch(f"{server}/a.pdf", settings, max_bytes=100_000)


def test_hosts_must_be_allowed(server, tmp_path):
    settings = settings_for(tmp_path, TIMEOUT=3)
    with pytest.raises(net.URLRefused, match="PROXY_ALLOWED_HOSTS"):
        net.fetch(f"{server}/a.pdf", settings, max_bytes=100_000, policy=only_loopback)


def test_redirects_are_checked_like_the_first_url(server, tmp_path):
    settings = settings_for(tmp_path, PROXY_ALLOWED_HOSTS=["*"], TIMEOUT=3)
    with pytest.raises(net.URLRefused, match="127.0.0.2"):
        net.fetch(f"{server}/elsewhere", settings, max_bytes=100_000, policy=only_loopback)
    with pytest.raises(net.URLRefused):  # localhost, by name, whatever the policy
        net.fetch(f"{server}/other-host", settings, max_bytes=100_000, policy=only_loopback)
    only_ip = settings_for(tmp_path, PROXY_ALLOWED_HOSTS=["127.0.0.1"], TIMEOUT=3)
    with pytest.raises(net.URLRefused, match="PROXY_ALLOWED_HOSTS"):
        net.fetch(f"{server}/elsewhere", only_ip, max_bytes=100_000, policy=lambda a: True)
    with pytest.raises(net.FetchFailed, match="redirects"):
        net.fetch(f"{server}/loop", settings, max_bytes=100_000, policy=only_loopback)


def test_size_cap(server, tmp_path):
    settings = settings_for(tmp_path, PROXY_ALLOWED_HOSTS=["127.0.0.1"], TIMEOUT=3)
    for path in ("/big", "/big-unannounced"):
        with pytest.raises(net.FetchFailed, match="larger than 4999"):
            net.fetch(f"{server}{path}", settings, max_bytes=4999, policy=only_loopback)
        assert len(net.fetch(f"{server}{path}", settings, max_bytes=5000,
                             policy=only_loopback).body) == 5000


def test_time_limit_covers_the_whole_exchange(server, tmp_path):
    settings = settings_for(tmp_path, PROXY_ALLOWED_HOSTS=["127.0.0.1"], TIMEOUT=1)
    for path in ("/slow", "/silent"):
        started = time.monotonic()
        with pytest.raises(net.FetchFailed):
            net.fetch(f"{server}{path}", settings, max_bytes=100_000, policy=only_loopback)
        assert time.monotonic() - started < 2.5, path


def test_http_errors(server, tmp_path):
    settings = settings_for(tmp_path, PROXY_ALLOWED_HOSTS=["127.0.0.1"], TIMEOUT=3)
    with pytest.raises(net.FetchFailed, match="404"):
        net.fetch(f"{server}/missing", settings, max_bytes=100_000, policy=only_loopback)


def test_remote_document_thumbnail_goes_through_net(server, tmp_path):
    size = (400, 200)
    allowed = settings_for(tmp_path, PROXY_ALLOWED_HOSTS=["127.0.0.1"], TIMEOUT=3)
    pixels = documents.remote_thumbnail_pixels(allowed, f"{server}/a.pdf", "pdf", size,
                                               policy=only_loopback)
    assert pixels.shape == (4, 200, 400)
    assert list(pixels[:3, 100, 50]) == [255, 0, 0] and list(pixels[:3, 100, 350]) == [0, 0, 255]
    # not fetched: a host that is not allowed, the default policy, content not of its extension
    closed = settings_for(tmp_path, TIMEOUT=3)
    assert documents.remote_thumbnail_pixels(closed, f"{server}/a.pdf", "pdf", size,
                                             policy=only_loopback) is None
    assert documents.remote_thumbnail_pixels(allowed, f"{server}/a.pdf", "pdf", size) is None
    assert documents.remote_thumbnail_pixels(allowed, f"{server}/big", "png", size,
                                             policy=only_loopback) is None


def test_headers_trickled_a_byte_at_a_time_meet_the_deadline(server, tmp_path):
    def trickle(handler: BaseHTTPRequestHandler) -> None:
        for byte in b"HTTP/1.0 200 OK\r\nX-Padding: " + b"a" * 200:
            try:
                handler.wfile.write(bytes([byte]))
            except OSError:
                return
            time.sleep(0.1)

    Handler.routes["/trickle"] = trickle
    settings = settings_for(tmp_path, PROXY_ALLOWED_HOSTS=["127.0.0.1"], TIMEOUT=1)
    started = time.monotonic()
    with pytest.raises(net.FetchFailed, match="too long"):
        net.fetch(f"{server}/trickle", settings, max_bytes=100_000, policy=only_loopback)
    assert time.monotonic() - started < 2.0


def test_international_names_and_paths_are_encoded():
    target = net.parse_url("https://Bücher.example/Karte é.pdf?q=ü".replace(" ", "%20"))
    assert target.host == "xn--bcher-kva.example" and target.port == 443
    assert target.path == "/Karte%20%C3%A9.pdf?q=%C3%BC"
