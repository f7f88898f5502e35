"""Hostile clients against a real ``cartotheca serve``: absurd numbers in every numeric parameter,
oversized and endless request headers, and more connections than the server takes.

Raw sockets and ``http.client`` are used on purpose: they show what a test client hides (a reset
connection, a 431 written before the body is read, a response that never ends).
"""

from __future__ import annotations

import http.client
import socket
import time
import urllib.parse

import pytest
from lxml import etree

from cartotheca.server import ServerLimits
from cartotheca.settings import Settings
from tests.conftest import ADMIN_PASSWORD, basic
from tests.factories import make_user
from tests.geodata.fixtures import publish_file, write_polygons, write_raster
from tests.support.processes import serving

HUGE = "99999999999999999999"  # past any 64-bit integer
SAFETY = 30.0  # seconds: no single exchange below may take longer


@pytest.fixture
def layers(db, settings, tmp_path):
    owner = make_user(db)
    polygons = publish_file(db, settings, owner, write_polygons(tmp_path), title="Polygons")
    raster = publish_file(db, settings, owner, write_raster(tmp_path), title="Raster")
    return polygons.alternate, raster.alternate


def _absurd_requests(vector: str, raster: str) -> list[tuple[str, dict, set[int], bytes]]:
    """(path, query, accepted statuses, a marker of the error body) for each absurd value."""
    wfs = {"SERVICE": "WFS", "REQUEST": "GetFeature", "TYPENAMES": vector, "TYPENAME": vector}
    wms = {"SERVICE": "WMS", "VERSION": "1.3.0", "REQUEST": "GetMap", "LAYERS": vector, "STYLES": "",
           "CRS": "EPSG:4326", "BBOX": "40,0,60,20", "WIDTH": "64", "HEIGHT": "64", "FORMAT": "image/png"}
    wcs = {"SERVICE": "WCS", "VERSION": "1.0.0", "REQUEST": "GetCoverage", "COVERAGE": raster,
           "CRS": "EPSG:4326", "BBOX": "0,40,16,52", "FORMAT": "GeoTIFF", "WIDTH": "10", "HEIGHT": "10"}
    wmts = {"SERVICE": "WMTS", "VERSION": "1.0.0", "REQUEST": "GetTile", "LAYER": raster, "STYLE": "",
            "TILEMATRIXSET": "EPSG:4326", "TILEMATRIX": "EPSG:4326:2", "TILEROW": "0", "TILECOL": "0",
            "FORMAT": "image/png"}
    csw = {"service": "CSW", "version": "2.0.2", "request": "GetRecords", "typenames": "csw:Record",
           "resulttype": "results", "elementsetname": "brief"}
    ows_error = b"ExceptionReport"
    return [
        ("/ows", {**wfs, "VERSION": "2.0.0", "COUNT": HUGE}, {400}, ows_error),
        ("/ows", {**wfs, "VERSION": "2.0.0", "STARTINDEX": HUGE}, {400}, ows_error),
        ("/ows", {**wfs, "VERSION": "1.1.0", "MAXFEATURES": "1e400"}, {400}, ows_error),
        ("/ows", {**wfs, "VERSION": "2.0.0", "COUNT": "-1"}, {400}, ows_error),
        ("/ows", {**wfs, "VERSION": "2.0.0", "STARTINDEX": "inf"}, {400}, ows_error),
        # WMS reports exceptions with HTTP 200, as GeoServer and MapServer do.
        ("/ows", {**wms, "WIDTH": HUGE}, {200}, b"ServiceExceptionReport"),
        ("/ows", {**wms, "HEIGHT": "-5"}, {200}, b"ServiceExceptionReport"),
        ("/ows", {**wms, "REQUEST": "GetFeatureInfo", "QUERY_LAYERS": vector, "I": "inf", "J": "1",
                  "INFO_FORMAT": "application/json"}, {200}, b"ServiceExceptionReport"),
        ("/ows", {**wcs, "WIDTH": HUGE}, {400}, ows_error),
        ("/ows", {**wmts, "TILEROW": HUGE}, {400}, ows_error),
        ("/ows", {"SERVICE": "WCS", "VERSION": "2.0.1", "REQUEST": "GetCoverage",
                  "COVERAGEID": raster.replace(":", "__"), "SUBSET": "Long(0,nan)"}, {400, 404}, ows_error),
        ("/catalogue/csw", {**csw, "maxRecords": HUGE}, {400}, ows_error),
        ("/catalogue/csw", {**csw, "startPosition": "abc"}, {400}, ows_error),
        (f"/tiles/{raster}/{HUGE}/0/0.png", {}, {400, 404}, b""),
        (f"/tiles/{raster}/3/{HUGE}/0.png", {}, {400, 404}, b""),
        ("/api/v2/resources", {"page": HUGE}, {404}, b'"success":false'),
        ("/api/v2/resources", {"page_size": HUGE}, {400}, b'"success":false'),
        ("/api/v2/resources", {"page": "-3"}, {400, 404}, b'"success":false'),
        ("/api/v2/datasets", {"page_size": "abc"}, {400}, b'"success":false'),
        (f"/api/v2/resources/{HUGE}", {}, {404}, b""),
        (f"/api/v2/uploads/{HUGE}", {}, {404}, b""),
        ("/monitoring/api/metric_data/request.count/", {"interval": HUGE}, {400}, b""),
        ("/monitoring/api/metric_data/request.count/", {"last": "1e400"}, {400}, b""),
    ]


def test_absurd_numbers_are_4xx_and_the_connection_stays_usable(live_server, layers):
    """Each answer is a clean client error on a connection kept alive: the very same socket then
    serves the next request."""
    host, port = "127.0.0.1", urllib.parse.urlsplit(live_server.url).port
    conn = http.client.HTTPConnection(host, port, timeout=SAFETY)
    admin = basic("admin", ADMIN_PASSWORD)
    try:
        for path, query, statuses, marker in _absurd_requests(*layers):
            url = path + ("?" + urllib.parse.urlencode(query) if query else "")
            conn.request("GET", url, headers=admin)
            sock = conn.sock
            response = conn.getresponse()
            body = response.read()
            assert response.status in statuses, (url, response.status, body[:300], live_server.log_tail())
            assert marker in body, (url, body[:300])
            assert response.getheader("connection", "").lower() != "close", url
            conn.request("GET", "/api/v2/resources?page_size=1", headers=admin)
            follow = conn.getresponse()
            assert follow.status == 200, (url, follow.read()[:300])
            assert follow.read() and conn.sock is sock, f"the connection was not reused after {url}"
    finally:
        conn.close()


def test_absurd_wfs_paging_in_an_xml_request(live_server, layers):
    vector, _ = layers
    body = (f'<wfs:GetFeature service="WFS" version="2.0.0" count="{HUGE}" '
            'xmlns:wfs="http://www.opengis.net/wfs/2.0" xmlns:fes="http://www.opengis.net/fes/2.0">'
            f'<wfs:Query typeNames="{vector}"/></wfs:GetFeature>').encode()
    conn = http.client.HTTPConnection("127.0.0.1", urllib.parse.urlsplit(live_server.url).port,
                                      timeout=SAFETY)
    try:
        conn.request("POST", "/ows", body=body, headers={"Content-Type": "text/xml"})
        response = conn.getresponse()
        report = etree.fromstring(response.read())
        assert response.status == 400
        assert report[0].get("exceptionCode") == "InvalidParameterValue"
    finally:
        conn.close()


@pytest.mark.parametrize("buffer", [f"-{HUGE}", "0", HUGE])
def test_feature_info_buffer_out_of_range_is_clamped(live_server, layers, buffer):
    """BUFFER is clamped to 0..100 pixels as before; 0 still asks about the clicked pixel."""
    vector, _ = layers
    query = {"SERVICE": "WMS", "VERSION": "1.3.0", "REQUEST": "GetFeatureInfo", "LAYERS": vector,
             "QUERY_LAYERS": vector, "STYLES": "", "CRS": "EPSG:4326", "BBOX": "40,0,60,20",
             "WIDTH": "64", "HEIGHT": "64", "I": "10", "J": "10", "BUFFER": buffer,
             "INFO_FORMAT": "application/json"}
    conn = http.client.HTTPConnection("127.0.0.1", urllib.parse.urlsplit(live_server.url).port,
                                      timeout=SAFETY)
    try:
        conn.request("GET", "/ows?" + urllib.parse.urlencode(query))
        response = conn.getresponse()
        body = response.read()
    finally:
        conn.close()
    assert response.status == 200 and response.getheader("content-type").startswith("application/json"), body
    assert b'"features"' in body


# -- request headers ---------------------------------------------------------------------------

def _connect(server) -> socket.socket:
    return socket.create_connection(("127.0.0.1", urllib.parse.urlsplit(server.url).port), timeout=SAFETY)


def _send(sock: socket.socket, data: bytes) -> None:
    """Send what the server takes; it may stop reading (and answer) before the end."""
    try:
        sock.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        pass


def _read_until_closed(sock: socket.socket) -> bytes:
    chunks = []
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


@pytest.fixture(scope="module")
def header_server(base_app, make_settings, tmp_path_factory):
    """A server whose header read timeout is short enough to wait for."""
    with serving(make_settings, tmp_path_factory.mktemp("header-log") / "server.log",
                 REQUEST_HEADER_TIMEOUT=2.0) as server:
        yield server


def test_one_megabyte_header_is_431(header_server):
    with _connect(header_server) as sock:
        _send(sock, b"GET /api/v2/ HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 1_000_000 + b"\r\n\r\n")
        answer = _read_until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]


def test_ten_thousand_headers_are_431(header_server):
    headers = b"".join(b"X-H%d: v\r\n" % i for i in range(10_000))
    with _connect(header_server) as sock:
        _send(sock, b"GET /api/v2/ HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\n")
        answer = _read_until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]


def test_headers_within_the_limits_pass(header_server):
    headers = b"".join(b"X-H%d: %s\r\n" % (i, b"v" * 100) for i in range(80))
    with _connect(header_server) as sock:
        _send(sock, b"GET /api/v2/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + headers + b"\r\n")
        answer = _read_until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]


def test_half_a_header_is_closed_after_the_header_timeout(header_server):
    with _connect(header_server) as sock:
        started = time.monotonic()
        sock.sendall(b"GET /api/v2/ HTTP/1.1\r\nHost: x\r\nX-Half: ")
        answer = _read_until_closed(sock)
        waited = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
    assert 1.5 <= waited < SAFETY


def test_a_silent_connection_is_closed_after_the_header_timeout(header_server):
    with _connect(header_server) as sock:
        started = time.monotonic()
        answer = _read_until_closed(sock)
        waited = time.monotonic() - started
    assert answer == b""
    assert 1.5 <= waited < SAFETY


def test_slow_headers_after_a_keep_alive_request_are_timed_out_too(header_server):
    with _connect(header_server) as sock:
        sock.sendall(b"GET /api/v2/ HTTP/1.1\r\nHost: x\r\n\r\n")
        first = sock.recv(65536)
        assert first.startswith(b"HTTP/1.1 200 ")
        started = time.monotonic()
        sock.sendall(b"GET /api/v2/ HTTP/1.1\r\nHo")
        answer = _read_until_closed(sock)
    assert b"HTTP/1.1 408 " in answer, answer[:200]
    assert time.monotonic() - started < SAFETY


def test_default_limits_are_safe():
    limits = ServerLimits.from_settings(Settings(_env_file=None))
    assert limits.header_timeout <= 30
    assert limits.max_header_bytes < 1_000_000 and limits.max_header_count < 10_000
    assert limits.limit_concurrency is not None and limits.retry_after > 0


# -- overload ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def crowded_server(base_app, make_settings, tmp_path_factory):
    with serving(make_settings, tmp_path_factory.mktemp("crowded-log") / "server.log",
                 LIMIT_CONCURRENCY=3, OVERLOAD_RETRY_AFTER=7) as server:
        yield server


def test_over_the_concurrency_limit_is_503_with_retry_after(crowded_server):
    port = urllib.parse.urlsplit(crowded_server.url).port
    # Connections count against the limit as uvicorn counts them: three open ones fill it.
    idle = [_connect(crowded_server) for _ in range(3)]
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=SAFETY)
    try:
        time.sleep(0.3)  # the server has accepted them
        started = time.monotonic()
        conn.request("GET", "/api/v2/")
        response = conn.getresponse()
        response.read()
        assert response.status == 503
        assert response.getheader("retry-after") == "7"
        assert response.getheader("connection") == "close"
        assert time.monotonic() - started < 5.0  # answered at once, not queued
    finally:
        conn.close()
        for sock in idle:
            sock.close()
    deadline = time.monotonic() + SAFETY
    while True:  # the slots free up as the server sees the connections closed
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=SAFETY)
        conn.request("GET", "/api/v2/")
        status = conn.getresponse().status
        conn.close()
        if status == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert status == 200
