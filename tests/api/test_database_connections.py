"""Database connections under clients that stop reading, pool exhaustion and database outages.

A real ``cartotheca serve`` process with a small pool (so a held connection would show at once)
serves large answers to raw sockets that send a request and then never read; meanwhile other
clients list resources. The database is then taken away from the server (PostgreSQL: its
connections terminated and new ones refused) and given back, without restarting the server.
"""

from __future__ import annotations

import secrets
import socket
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import httpx
import numpy as np
import psutil
import pyogrio.raw
import pytest
import rasterio
import shapely
from fastapi.testclient import TestClient
from lxml import etree
from rasterio.transform import from_bounds
from sqlalchemy import create_engine, select, text
from sqlalchemy.engine import make_url

from cartotheca.catalogue import oauth
from cartotheca.db.models import Resource
from tests.conftest import ADMIN_PASSWORD
from tests.factories import make_resource, make_user
from tests.geodata.fixtures import publish_file
from tests.support.processes import LiveServer, serving
from tests.support.services import PG_ADMIN_URL

STALLED = 35  # clients that send a request for a large answer and never read it
STALLED_TURN_SECONDS = 150  # how long the last of them may wait for its turn at the OWS slots
LISTS = 20  # ordinary requests made while they stall
POOL_SIZE, MAX_OVERFLOW = 2, 2
FEATURES = 30_000
CSW_RECORDS = 100
ABSTRACT_CHARS = 45_000  # random bytes of each record's abstract (60k characters as text)
# More than every buffer between a stalled client and the server holds (the server's socket
# buffer grows to 4 MB at most, uvicorn pauses writing at 64 kB, the client's receive buffer
# is made small): an answer still sending this much was held up by its client.
UNBUFFERED_BYTES = 4_500_000
OWS_NS = "http://www.opengis.net/ows/1.1"
CSW_OWS_NS = "http://www.opengis.net/ows"
GET_RECORDS = {"service": "CSW", "version": "2.0.2", "request": "GetRecords", "typenames": "csw:Record",
               "resulttype": "results", "elementsetname": "brief"}


def _large_points(path: Path, count: int) -> Path:
    """Points with a random text attribute (GeoJSON of ~300 bytes a feature)."""
    rng = np.random.default_rng(7)
    xs, ys = rng.uniform(-170, 170, count), rng.uniform(-80, 80, count)
    columns = {"id": np.arange(1, count + 1, dtype=np.int32),
               "note": np.array([secrets.token_urlsafe(75) for _ in range(count)], dtype=object)}
    pyogrio.raw.write(str(path), shapely.to_wkb(shapely.points(xs, ys)), list(columns.values()),
                      list(columns), driver="GPKG", crs="EPSG:4326", geometry_type="Point")
    return path


def _noise_raster(path: Path) -> Path:
    """A GeoTIFF of random values: its download (the stored COG, streamed) stays large."""
    rng = np.random.default_rng(11)
    height, width = 1200, 1600
    profile = {"driver": "GTiff", "width": width, "height": height, "count": 1, "dtype": "float32",
               "crs": "EPSG:4326", "transform": from_bounds(0.0, 40.0, 16.0, 52.0, width, height)}
    with rasterio.open(path, "w", **profile) as dst:
        dst.write(rng.random((1, height, width), dtype=np.float32))
    return path


@contextmanager
def _serving(make_settings, log: Path, **overrides) -> Iterator[tuple[LiveServer, subprocess.Popen]]:
    """``cartotheca serve`` with the tests' settings and ``overrides`` on a free port, its own
    address as SITEURL."""
    with serving(make_settings, log, own_site_url=True, **overrides) as server:
        yield server, server.process


def _stalled_request(server: LiveServer, path: str) -> socket.socket:
    """A client that asks for ``path`` and reads only the status line of the answer."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(STALLED_TURN_SECONDS + 30)
    host, port = server.url[len("http://"):].rstrip("/").split(":")
    sock.connect((host, int(port)))
    sock.sendall(f"GET /{path} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
    return sock


def _status_line(sock: socket.socket) -> bytes:
    line = b""
    while not line.endswith(b"\r\n"):
        chunk = sock.recv(1)
        if not chunk:
            break
        line += chunk
    return line


def _rest_of(sock: socket.socket) -> int:
    """Bytes the server still sends once the client reads (until the connection is closed)."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    total = 0
    while chunk := sock.recv(1 << 20):
        total += len(chunk)
        if total > UNBUFFERED_BYTES:
            break
    return total


def _settle(proc: subprocess.Popen, limit: float = 120.0) -> None:
    """Wait until the server stops working on the stalled answers (it fills their socket
    buffers, then waits for their clients): what follows then measures waiting, not CPU."""
    server = psutil.Process(proc.pid)
    deadline = time.monotonic() + limit
    before = sum(server.cpu_times()[:2])
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = sum(server.cpu_times()[:2])
        if now - before < 0.05:
            return
        before = now
    raise AssertionError(f"the server kept working for {limit} s")


def _timed_list(client: httpx.Client) -> tuple[int, float]:
    start = time.monotonic()
    response = client.get("api/v2/datasets")
    return response.status_code, time.monotonic() - start


def _server_connections(admin, proc: subprocess.Popen, databases: list[str]) -> list[dict]:
    """pg_stat_activity rows of the server process's connections to ``databases``."""
    ports = {c.laddr.port for c in psutil.Process(proc.pid).net_connections("tcp")
             if c.raddr and c.raddr.port == 5432}
    with admin.connect() as conn:
        rows = conn.execute(text(
            "SELECT datname, client_port, state, now() - state_change AS in_state "
            "FROM pg_stat_activity WHERE datname = ANY(:names)"), {"names": databases}).mappings().all()
    return [dict(r) for r in rows if r["client_port"] in ports]


@pytest.fixture
def large_data(db, settings, tmp_path):
    """A layer of 30k points, a raster of 7 MB and 100 public records with long abstracts."""
    owner = make_user(db)
    layer = publish_file(db, settings, owner, _large_points(tmp_path / "crowd.gpkg", FEATURES),
                         title="Crowd")
    raster = publish_file(db, settings, owner, _noise_raster(tmp_path / "noise.tif"), title="Noise")
    for i in range(CSW_RECORDS):
        make_resource(db, settings, owner, f"Long record {i}", abstract=secrets.token_urlsafe(ABSTRACT_CHARS))
    return layer, raster


def test_clients_that_stop_reading_hold_no_database_connection(
        large_data, make_settings, backend, database_url, datastore_url, tmp_path):
    layer, raster = large_data
    alternate = layer.alternate
    stalling = {
        "GetFeature": f"ows?service=WFS&version=2.0.0&request=GetFeature&typeNames={alternate}"
                      "&outputFormat=application/json",
        # A download streams a file (vector: a zipped shapefile spooled first, raster: its COG)
        "download": f"datasets/{raster.alternate}/dataset_download",
        "GetRecords": "catalogue/csw?service=CSW&version=2.0.2&request=GetRecords&typenames=csw:Record"
                      f"&resulttype=results&elementsetname=full&maxrecords={CSW_RECORDS}",
    }
    # The 35 requests of a kind arrive at once and take turns for the OWS slots (one per CPU); on
    # a slow or busy machine the last ones waited past the default 30 s and were refused with
    # 503, which is the overload answer, not what this test is about: their turn may take longer.
    limits = dict(DATABASE_POOL_SIZE=POOL_SIZE, DATABASE_MAX_OVERFLOW=MAX_OVERFLOW, THREAD_POOL_SIZE=4,
                  WFS_COUNT_DEFAULT=FEATURES, CSW_MAX_RECORDS=CSW_RECORDS,
                  OWS_QUEUE_SECONDS=STALLED_TURN_SECONDS)
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT") if backend == "postgresql" else None
    databases = [make_url(u).database for u in (database_url, datastore_url) if u]
    with _serving(make_settings, tmp_path / "server.log", **limits) as (server, proc):
        for kind, path in stalling.items():
            sockets = [_stalled_request(server, path) for _ in range(STALLED)]
            try:
                # Every stalled request got its answer under way (the handler ran and returned).
                assert [_status_line(s) for s in sockets] == [b"HTTP/1.1 200 OK\r\n"] * STALLED, \
                    (kind, server.log_tail())
                _settle(proc)
                with httpx.Client(base_url=server.url, timeout=30) as client:
                    answers = [_timed_list(client) for _ in range(LISTS)]
                assert all(status == 200 for status, _ in answers), (kind, answers, server.log_tail())
                assert max(elapsed for _, elapsed in answers) < 2.0, (kind, answers)
                if admin is not None:
                    held = _server_connections(admin, proc, databases)
                    stuck = [r for r in held if r["state"] == "idle in transaction"
                             and r["in_state"].total_seconds() > 1]
                    assert stuck == [], (kind, stuck)
                    catalogue = [r for r in held if r["datname"] == databases[0]]
                    # the monitoring and notification threads' connections included
                    assert len(catalogue) <= POOL_SIZE + MAX_OVERFLOW, (kind, catalogue)
                # The answers were really held up by their clients: far more than buffers hold.
                assert _rest_of(sockets[0]) > UNBUFFERED_BYTES, kind
            finally:
                for sock in sockets:
                    sock.close()
    if admin is not None:
        admin.dispose()


def test_exhausted_pool_answers_503_quickly(make_app, backend):
    app = make_app(DATABASE_POOL_SIZE=1, DATABASE_MAX_OVERFLOW=0, DATABASE_POOL_TIMEOUT=0.5)
    client = TestClient(app, raise_server_exceptions=False)
    with app.state.cartotheca.engine.connect() as held:  # the pool's only connection
        held.execute(text("SELECT 1"))
        start = time.monotonic()
        listing = client.get("/api/v2/resources")
        waited = time.monotonic() - start
        capabilities = client.get("/ows", params={"service": "WFS", "version": "2.0.0",
                                                  "request": "GetCapabilities"})
        records = client.get("/catalogue/csw", params=GET_RECORDS)
    assert listing.status_code == 503, listing.text
    assert listing.headers["retry-after"].isdigit()
    assert listing.json()["code"] == "service_unavailable"
    assert waited < 10  # the pool timeout, not the default 30 s
    assert capabilities.status_code == 503
    assert capabilities.headers["retry-after"].isdigit()
    report = etree.fromstring(capabilities.content)
    assert report.tag == f"{{{OWS_NS}}}ExceptionReport"
    assert records.status_code == 503, records.text
    assert records.headers["retry-after"].isdigit()
    assert etree.fromstring(records.content).tag == f"{{{CSW_OWS_NS}}}ExceptionReport"
    assert client.get("/api/v2/resources").status_code == 200  # the connection is back
    assert client.get("/catalogue/csw", params=GET_RECORDS).status_code == 200


@pytest.fixture
def outage(backend, database_url):
    """Take the test database away from its clients and give it back: new connections refused
    and the open ones terminated (the machine's PostgreSQL itself keeps running)."""
    if backend != "postgresql":
        pytest.skip("an outage of a server database")
    name = make_url(database_url).database
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")

    def down() -> None:
        with admin.connect() as conn:
            conn.execute(text(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false'))
            conn.execute(text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                              "WHERE datname = :n AND pid <> pg_backend_pid()"), {"n": name})

    def up() -> None:
        with admin.connect() as conn:
            conn.execute(text(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true'))

    try:
        yield down, up
    finally:
        up()
        admin.dispose()


def test_database_outage_answers_503_and_recovers_without_restart(outage, make_settings, tmp_path):
    down, up = outage
    wfs = {"service": "WFS", "version": "2.0.0", "request": "GetCapabilities"}
    with _serving(make_settings, tmp_path / "server.log") as (server, _proc), \
            httpx.Client(base_url=server.url, timeout=30) as client:
        assert client.get("api/v2/resources").status_code == 200
        assert client.get("ows", params=wfs).status_code == 200
        down()
        try:
            for _ in range(3):
                listing = client.get("api/v2/resources")
                assert listing.status_code == 503, (listing.text, server.log_tail())
                assert listing.headers["retry-after"].isdigit()
                capabilities = client.get("ows", params=wfs)
                assert capabilities.status_code == 503, capabilities.text
                assert capabilities.headers["retry-after"].isdigit()
                assert etree.fromstring(capabilities.content).tag == f"{{{OWS_NS}}}ExceptionReport"
                records = client.get("catalogue/csw", params=GET_RECORDS)
                assert records.status_code == 503, records.text
                assert records.headers["retry-after"].isdigit()
        finally:
            up()
        assert client.get("api/v2/resources").status_code == 200, server.log_tail()
        assert client.get("ows", params=wfs).status_code == 200
        assert client.get("catalogue/csw", params=GET_RECORDS).status_code == 200
        # Connections killed under a running server are replaced on their next checkout.
        down()
        up()
        assert [client.get("api/v2/resources").status_code for _ in range(5)] == [200] * 5


def test_server_processes_take_concurrent_writes_and_reads(db, settings, make_settings, tmp_path):
    """Two server processes on one database: writes queue for the write lock (SQLite: across
    processes) instead of failing, and reads go on beside them."""
    owner = make_user(db)
    ids = [make_resource(db, settings, owner, f"Busy {i}").id for i in range(10)]
    requests = 100

    application, secret = oauth.create_application(db, name="writer", grant_types=("password",))
    db.commit()

    with _serving(make_settings, tmp_path / "server.log", WORKERS=2) as (server, _proc):
        # One password check, then a Bearer token: password checks are rationed per process.
        grant = httpx.post(f"{server.url}o/token/", auth=(application.client_id, secret), timeout=60,
                           data={"grant_type": "password", "username": "admin", "password": ADMIN_PASSWORD})
        assert grant.status_code == 200, grant.text
        bearer = {"Authorization": f"Bearer {grant.json()['access_token']}"}

        def call(i: int) -> int:
            with httpx.Client(base_url=server.url, timeout=60, headers=bearer) as client:
                if i % 2:
                    return client.get("api/v2/resources", params={"page_size": 5}).status_code
                return client.patch(f"api/v2/resources/{ids[i // 2 % len(ids)]}",
                                    json={"title": f"Busy {i} renamed"}).status_code

        with ThreadPoolExecutor(40) as pool:
            statuses = list(pool.map(call, range(requests)))
        log = server.log_tail()
    assert statuses == [200] * requests, (sorted(set(statuses)), log)
    assert "database is locked" not in log
    db.expire_all()
    titles = {r.title for r in db.scalars(select(Resource).where(Resource.id.in_(ids)))}
    assert all(t.endswith(" renamed") for t in titles), titles
