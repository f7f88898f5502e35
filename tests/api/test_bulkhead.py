"""The bound on heavy map-server requests per process (``cartotheca.api.bulkhead``).

While every slot is taken, maps, tiles and records wait (on the event loop, holding no thread)
or, past the waiting places or the wait, get 503 with Retry-After; catalogue reads go on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import anyio
import pytest
from fastapi.testclient import TestClient
from lxml import etree

from cartotheca.api.bulkhead import Bulkhead, Overloaded

CAPABILITIES = {"service": "WMS", "version": "1.3.0", "request": "GetCapabilities"}
RECORDS = {"service": "CSW", "version": "2.0.2", "request": "GetRecords", "typenames": "csw:Record",
           "resulttype": "results"}


def test_slots_bound_the_work_and_waiters_get_in_as_slots_free():
    async def main() -> tuple[int, list[str]]:
        bulkhead = Bulkhead(concurrency=2, queue=10, wait_seconds=5)
        running, most, order = 0, 0, []

        async def work(name: str) -> None:
            nonlocal running, most
            async with bulkhead.slot():
                running += 1
                most = max(most, running)
                await anyio.sleep(0.05)
                order.append(name)
                running -= 1

        async with anyio.create_task_group() as group:
            for i in range(6):
                group.start_soon(work, f"w{i}")
        return most, order

    most, order = anyio.run(main)
    assert most == 2
    assert sorted(order) == [f"w{i}" for i in range(6)]


def test_full_waiting_places_and_a_wait_that_runs_out_are_overloaded():
    async def main() -> tuple[list[str], float, int]:
        bulkhead = Bulkhead(concurrency=1, queue=1, wait_seconds=0.2)
        outcomes = []
        release = anyio.Event()

        async def hold() -> None:
            async with bulkhead.slot():
                await release.wait()

        async def try_one(name: str) -> None:
            try:
                async with bulkhead.slot():
                    outcomes.append(f"{name} ran")
            except Overloaded:
                outcomes.append(f"{name} overloaded")

        async with anyio.create_task_group() as group:
            group.start_soon(hold)
            await anyio.sleep(0.01)
            started = time.monotonic()
            group.start_soon(try_one, "waiter")  # takes the one waiting place, then times out
            await anyio.sleep(0.01)
            await try_one("third")  # no waiting place: refused at once
            await anyio.sleep(0.3)
            waited = time.monotonic() - started
            release.set()
        # Once the slot is free again, the next request runs.
        await try_one("later")
        return outcomes, waited, bulkhead.waiting

    outcomes, waited, waiting = anyio.run(main)
    assert outcomes == ["third overloaded", "waiter overloaded", "later ran"]
    assert waited >= 0.2
    assert waiting == 0


@contextmanager
def _slots_taken(client: TestClient, bulkhead: Bulkhead) -> Iterator[None]:
    """Every slot held by a task on the app's event loop until the block ends."""
    release = client.portal.call(anyio.Event)

    async def hold() -> None:
        async with bulkhead.slot():
            await release.wait()

    futures = [client.portal.start_task_soon(hold) for _ in range(bulkhead.concurrency)]
    deadline = time.monotonic() + 5
    while bulkhead.running < bulkhead.concurrency and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        yield
    finally:
        client.portal.call(release.set)
        for future in futures:
            future.result(timeout=5)


@pytest.fixture
def busy_app(make_app) -> Callable[..., TestClient]:
    def build(**overrides) -> TestClient:
        return TestClient(make_app(OWS_CONCURRENCY=1, OVERLOAD_RETRY_AFTER=7, **overrides))
    return build


def test_map_requests_past_the_bound_get_503_and_catalogue_reads_go_on(busy_app):
    with busy_app(OWS_QUEUE=0) as client:
        bulkhead = client.app.state.cartotheca.bulkhead
        with _slots_taken(client, bulkhead):
            capabilities = client.get("/ows", params=CAPABILITIES)
            records = client.get("/catalogue/csw", params=RECORDS)
            tile = client.get("/tiles/geonode:nothing/1/0/0.png")
            listing = client.get("/api/v2/resources")
        after = client.get("/ows", params=CAPABILITIES)
    for response in (capabilities, records, tile):
        assert response.status_code == 503, response.text
        assert response.headers["retry-after"] == "7"
    assert b"ServiceException" in capabilities.content
    assert etree.fromstring(records.content).tag == "{http://www.opengis.net/ows}ExceptionReport"
    assert listing.status_code == 200
    assert after.status_code == 200


def test_a_map_request_waits_for_a_slot_up_to_the_limit(busy_app):
    with busy_app(OWS_QUEUE=4, OWS_QUEUE_SECONDS=0.3) as client:
        bulkhead = client.app.state.cartotheca.bulkhead
        with _slots_taken(client, bulkhead):
            started = time.monotonic()
            refused = client.get("/ows", params=CAPABILITIES)
            waited = time.monotonic() - started
        assert refused.status_code == 503
        assert waited >= 0.3
        assert bulkhead.waiting == 0
        assert client.get("/ows", params=CAPABILITIES).status_code == 200
