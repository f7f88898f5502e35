"""A server process under concurrent requests, its PostgreSQL connections watched from outside.

``DATABASE_POOL_SIZE + DATABASE_MAX_OVERFLOW`` is all a process may hold, the monitoring and
notification threads' own connections included; and no connection stays "idle in transaction"
for more than a second while its request waits for a thread, renders, serialises or streams.
A real ``cartotheca serve`` serves a mix of reads, maps, features, records and writes (each write
queues a notice and every request a monitoring record) while ``pg_stat_activity`` is sampled.
"""

from __future__ import annotations

import secrets
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from sqlalchemy.engine import make_url

from tests.conftest import ADMIN_PASSWORD, basic
from tests.factories import make_resource, make_user
from tests.geodata.fixtures import publish_file, write_points
from tests.support.pg_activity import ActivityWatch
from tests.support.processes import serving

POOL_SIZE, MAX_OVERFLOW = 3, 2
CLIENTS, ROUNDS = 24, 8
LONG_RECORDS = 100  # CSW records of 60k characters each: seconds of pycsw's XML writing per page


@pytest.fixture
def catalogue(db, settings, tmp_path, backend):
    if backend != "postgresql":
        pytest.skip("connections counted in pg_stat_activity")
    owner = make_user(db)
    layer = publish_file(db, settings, owner, write_points(tmp_path), title="Budget points")
    ids = [make_resource(db, settings, owner, f"Budget {i}").id for i in range(10)]
    return layer.alternate, ids


def _requests(alternate: str, ids: list[int]) -> list[tuple[str, str, dict]]:
    getmap = {"service": "WMS", "version": "1.1.1", "request": "GetMap", "layers": alternate,
              "styles": "", "srs": "EPSG:4326", "bbox": "-12,38,10,50", "width": 256, "height": 256,
              "format": "image/png"}
    getfeature = {"service": "WFS", "version": "2.0.0", "request": "GetFeature", "typeNames": alternate}
    records = {"service": "CSW", "version": "2.0.2", "request": "GetRecords", "typenames": "csw:Record",
               "resulttype": "results", "elementsetname": "brief"}
    return [("GET", "api/v2/resources", {}), ("GET", f"api/v2/resources/{ids[0]}", {}),
            ("GET", "ows", getmap), ("GET", "ows", getfeature), ("GET", "catalogue/csw", records),
            ("PATCH", f"api/v2/resources/{ids[1]}", {})]


def test_a_process_never_holds_more_than_its_budget(catalogue, make_settings, database_url, tmp_path):
    alternate, ids = catalogue
    mix = _requests(alternate, ids)
    budget = POOL_SIZE + MAX_OVERFLOW
    with serving(make_settings, tmp_path / "server.log", own_site_url=True, DATABASE_POOL_SIZE=POOL_SIZE,
                 DATABASE_MAX_OVERFLOW=MAX_OVERFLOW, DATABASE_POOL_TIMEOUT=30,
                 MONITORING_FLUSH_INTERVAL=0.1) as server:

        def client(n: int) -> list[int]:
            statuses = []
            admin = basic("admin", ADMIN_PASSWORD)
            with httpx.Client(base_url=server.url, timeout=60, headers=admin) as http:
                for i in range(ROUNDS):
                    method, path, params = mix[(n + i) % len(mix)]
                    body = {"abstract": f"round {n}.{i}"} if method == "PATCH" else None
                    statuses.append(http.request(method, path, params=params, json=body).status_code)
            return statuses

        with ActivityWatch(server.process.pid, make_url(database_url).database) as watch, \
                ThreadPoolExecutor(CLIENTS) as pool:
            statuses = [s for batch in pool.map(client, range(CLIENTS)) for s in batch]
        log = server.log_tail()
    assert statuses == [200] * CLIENTS * ROUNDS, (sorted(set(statuses)), log)
    # The watch saw the server busy, beyond its requests' pool alone, and never over budget.
    assert watch.most_per_process() >= POOL_SIZE, watch.connections[-5:]
    busiest = max(watch.connections, key=lambda sample: max(sample.values(), default=0))
    assert watch.most_per_process() <= budget, busiest


def test_no_transaction_is_left_open_while_requests_wait_or_work(
        catalogue, db, settings, make_settings, database_url, tmp_path):
    """Few threads for many slow requests: each waits for its thread, between the steps of its
    work (identifying the requester, then answering) and behind pycsw writing long records and
    WFS reading features, and none keeps a transaction open meanwhile."""
    alternate, ids = catalogue
    owner = make_user(db)
    for i in range(LONG_RECORDS):
        make_resource(db, settings, owner, f"Long {i}", abstract=secrets.token_urlsafe(45_000))
    records = {"service": "CSW", "version": "2.0.2", "request": "GetRecords", "typenames": "csw:Record",
               "resulttype": "results", "elementsetname": "full", "maxrecords": LONG_RECORDS}
    getfeature = {"service": "WFS", "version": "2.0.0", "request": "GetFeature", "typeNames": alternate,
                  "outputFormat": "application/json"}
    mix = [("api/v2/resources", {}), ("catalogue/csw", records), (f"api/v2/resources/{ids[0]}", {}),
           ("ows", getfeature)]
    with serving(make_settings, tmp_path / "server.log", own_site_url=True, THREAD_POOL_SIZE=1,
                 OWS_CONCURRENCY=1) as server:

        def client(n: int) -> list[int]:
            admin = basic("admin", ADMIN_PASSWORD)
            with httpx.Client(base_url=server.url, timeout=120, headers=admin) as http:
                return [http.get(path, params=params).status_code
                        for path, params in (mix[(n + i) % len(mix)] for i in range(6))]

        with ActivityWatch(server.process.pid, make_url(database_url).database) as watch, \
                ThreadPoolExecutor(CLIENTS) as pool:
            statuses = [s for batch in pool.map(client, range(CLIENTS)) for s in batch]
        log = server.log_tail()
    assert statuses == [200] * CLIENTS * 6, (sorted(set(statuses)), log)
    assert watch.most_per_process() >= 1, "the watch saw no connection of the server"
    seconds, query = watch.longest_idle_in_transaction()
    assert seconds <= 1.0, (seconds, query)
