"""Two server processes and a Celery worker over one database: after each step's writes (one
from the test's own session, one through each server, one run by the worker), each server's
next totals and facet counts equal SQL's (an app without the index)."""

from __future__ import annotations

import random
import time

import httpx
from fastapi.testclient import TestClient

from tests.conftest import ADMIN_PASSWORD, basic
from tests.factories import PASSWORD
from tests.support.catalogue_changes import CATEGORIES, KEYWORDS, make_cast, random_change
from tests.support.executions import wait_execution
from tests.support.ports import free_port
from tests.support.processes import wait_http

ADMIN = basic("admin", ADMIN_PASSWORD)
QUERIES = ({}, {"filter{keywords.slug.in}": "rivers"}, {"advertised": "false"},
           {"filter{resource_type.in}": "dataset", "search": "r"})


def wait_for_index(server, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while "catalogue index built" not in server.log():
        assert time.monotonic() < deadline, server.log()
        time.sleep(0.1)


def answers(get, headers) -> list:
    """Totals of the list queries and every facet's topics, as the wire says them."""
    out: list = []
    for query in QUERIES:
        response = get("/api/v2/resources", params={**query, "page_size": "1"}, headers=headers)
        assert response.status_code == 200, response.text
        out.append(response.json()["total"])
    facets = get("/api/v2/facets", params={"include_topics": "1"}, headers=headers)
    assert facets.status_code == 200, facets.text
    out.append([(f["name"], f.get("topics")) for f in facets.json()["facets"]])
    return out


def write_through(http: httpx.Client, base: str, cast, rnd: random.Random) -> None:
    """A metadata edit the server process makes itself."""
    rid = rnd.choice(cast.resources)
    change = rnd.choice(({"featured": rnd.random() < 0.5}, {"is_published": rnd.random() < 0.5},
                         {"keywords": [{"name": k} for k in rnd.sample(KEYWORDS, rnd.randint(0, 2))]},
                         {"category": {"identifier": rnd.choice(CATEGORIES)}}))
    response = http.patch(f"{base}/api/v2/resources/{rid}", json=change, headers=ADMIN)
    assert response.status_code == 200, response.text


def permissions_by_worker(http: httpx.Client, base: str, cast, rnd: random.Random) -> None:
    """New view permissions of one resource, which the server hands to the Celery worker."""
    rid = rnd.choice(cast.resources)
    users = [{"id": u.id, "permissions": "view"} for u in rnd.sample(cast.users, rnd.randint(0, 2))]
    groups = [{"id": g.id, "permissions": "view"} for g in rnd.sample(cast.groups, rnd.randint(0, 2))]
    started = http.put(f"{base}/api/v2/resources/{rid}/permissions", headers=ADMIN,
                       json={"users": users, "groups": groups})
    assert started.status_code == 200, started.text
    # the servers advertise the test client's site URL: ask this server at the same path
    done = wait_execution(lambda path, **kw: http.get(base + path, **kw), started.json()["status_url"], ADMIN)
    assert done["status"] == "finished", done


def test_two_processes_and_a_worker_answer_as_sql_after_every_write(db, settings, spawn, make_app,
                                                                      broker_url):
    cast = make_cast(db, settings)
    celery = {"CARTOTHECA_TASK_BACKEND": "celery", "CARTOTHECA_CELERY_BROKER_URL": broker_url}
    worker = spawn(["worker", "--concurrency", "1", "--loglevel", "warning"], **celery).start()
    servers = []
    for _ in range(2):
        port = free_port()
        server = spawn(["serve", "--port", str(port)], CARTOTHECA_SITEURL="http://testserver/",
                       CARTOTHECA_LOG_LEVEL="info", **celery).start()
        servers.append((server, f"http://127.0.0.1:{port}"))
    for server, base in servers:
        wait_http(f"{base}/api/v2/", timeout=120)  # three processes start at once
        wait_for_index(server)
    sql_app = make_app(CATALOGUE_INDEX_ENABLED=False)
    who = {"anonymous": {}, "admin": ADMIN,
           **{u.username: basic(u.username, PASSWORD) for u in (cast.member, cast.users[0])}}
    rnd = random.Random(3)
    with TestClient(sql_app) as sql, httpx.Client(timeout=30) as http:
        for step in range(8):
            random_change(db, settings, cast, rnd)
            if not cast.resources:
                continue
            write_through(http, servers[step % 2][1], cast, rnd)
            permissions_by_worker(http, servers[(step + 1) % 2][1], cast, rnd)
            for name, headers in who.items():
                expected = answers(sql.get, headers)
                for server, base in servers:
                    got = answers(lambda path, base=base, **kw: http.get(base + path, **kw), headers)
                    assert got == expected, f"{name} at {base} after step {step}\n{server.log()[-2000:]}"
    for process in (*(server for server, _base in servers), worker):
        assert "Traceback" not in process.log()
