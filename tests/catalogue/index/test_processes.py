"""Two server processes over one database: after each write from the test's own session, each
process's next total and facet counts equal SQL's (an app without the index)."""

from __future__ import annotations

import random
import time

import httpx
from fastapi.testclient import TestClient

from tests.conftest import ADMIN_PASSWORD, basic
from tests.factories import PASSWORD
from tests.support.catalogue_changes import make_cast, random_change
from tests.support.ports import free_port
from tests.support.processes import wait_http

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


def test_two_processes_answer_as_sql_after_every_write(db, settings, spawn, make_app):
    cast = make_cast(db, settings)
    servers = []
    for _ in range(2):
        port = free_port()
        server = spawn(["serve", "--port", str(port)], CARTOTHECA_SITEURL="http://testserver/",
                       CARTOTHECA_LOG_LEVEL="info").start()
        servers.append((server, f"http://127.0.0.1:{port}"))
    for server, base in servers:
        wait_http(f"{base}/api/v2/")
        wait_for_index(server)
    sql_app = make_app(CATALOGUE_INDEX_ENABLED=False)
    who = {"anonymous": {}, "admin": basic("admin", ADMIN_PASSWORD),
           **{u.username: basic(u.username, PASSWORD) for u in (cast.member, cast.users[0])}}
    rnd = random.Random(3)
    with TestClient(sql_app) as sql, httpx.Client(timeout=30) as http:
        for _step in range(8):
            random_change(db, settings, cast, rnd)
            for name, headers in who.items():
                expected = answers(sql.get, headers)
                for server, base in servers:
                    got = answers(lambda path, base=base, **kw: http.get(base + path, **kw), headers)
                    assert got == expected, f"{name} at {base}\n{server.log()[-2000:]}"
    for server, _base in servers:
        assert "Traceback" not in server.log()
