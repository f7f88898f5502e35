"""Harvesting a second, real Cartotheca server: its GeoNode API, its WMS and its CSW.

The remote runs once per module (its own SQLite database and data folder); the local catalogue
is the parametrised test database (SQLite and PostgreSQL), served in-process with its worker
threads, so every action goes through the execution engine as in production.
"""

from __future__ import annotations

import time
import uuid

import pytest
from fastapi.testclient import TestClient

from cartotheca.catalogue.harvesting import runs
from cartotheca.db.models import Harvester
from tests.catalogue.harvesting.remote import RemoteCatalogue
from tests.conftest import ADMIN_PASSWORD, basic

ADMIN = basic("admin", ADMIN_PASSWORD)
LOOPBACK = {"PROXY_ALLOWED_HOSTS": ["127.0.0.1"], "HARVESTER_ALLOWED_PRIVATE_NETWORKS": ["127.0.0.0/8"]}


@pytest.fixture(scope="module")
def remote_server(tmp_path_factory):
    """One remote for the module, whichever backend the local catalogue runs on."""
    catalogue = RemoteCatalogue(tmp_path_factory.mktemp("remote"))
    catalogue.populate()
    catalogue.start()
    yield catalogue
    catalogue.stop()


@pytest.fixture
def remote(remote_server):
    remote_server.ensure_up()
    return remote_server


@pytest.fixture
def local(make_app):
    with TestClient(make_app(**LOOPBACK)) as client:
        yield client


def create(client, kind: str, url: str, **fields) -> int:
    body = {"name": f"{kind}-{uuid.uuid4().hex[:8]}", "remote_url": url, "harvester_type": kind,
            **fields}
    response = client.post("/api/v2/harvesters/", json=body, headers=ADMIN)
    assert response.status_code == 201, response.text
    return response.json()["harvester"]["id"]


def detail(client, harvester_id: int) -> dict:
    response = client.get(f"/api/v2/harvesters/{harvester_id}/", headers=ADMIN)
    assert response.status_code == 200, response.text
    return response.json()["harvester"]


def act(client, harvester_id: int, status: str, timeout: float = 30.0) -> dict:
    """Ask for an action the way GeoNode clients do (PATCH status), then wait for ready."""
    response = client.patch(f"/api/v2/harvesters/{harvester_id}/", json={"status": status},
                            headers=ADMIN)
    assert response.status_code == 200, response.text
    assert response.json()["harvester"]["status"] in (status, "ready")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        record = detail(client, harvester_id)
        if record["status"] == "ready":
            return record
        time.sleep(0.1)
    raise AssertionError(f"harvester {harvester_id} still {record['status']}")


def harvestable(client, harvester_id: int) -> dict[str, dict]:
    response = client.get(f"/api/v2/harvesters/{harvester_id}/harvestable-resources/",
                          params={"page_size": 100})
    assert response.status_code == 200, response.text
    return {item["unique_identifier"]: item for item in response.json()["harvestable_resources"]}


def select(client, harvester_id: int, identifiers) -> None:
    body = [{"unique_identifier": i, "should_be_harvested": True} for i in identifiers]
    response = client.patch(f"/api/v2/harvesters/{harvester_id}/harvestable-resources/", json=body,
                            headers=ADMIN)
    assert response.status_code == 200, response.text
    assert {i["unique_identifier"] for i in response.json()} == set(identifiers)
    assert all(i["should_be_harvested"] for i in response.json())


def local_remote_resources(client) -> dict[str, dict]:
    response = client.get("/api/v2/resources/", params={"filter{sourcetype}": "REMOTE",
                                                        "page_size": 100}, headers=ADMIN)
    assert response.status_code == 200, response.text
    return {r["title"]: r for r in response.json()["resources"]}


def latest_session(client) -> dict:
    response = client.get("/api/v2/harvesting-sessions/")
    assert response.status_code == 200
    return response.json()["asynchronous_harvesting_sessions"][0]


def test_geonode_harvest_and_update(remote, local):
    offered = {r["uuid"]: r for r in remote.resources() if r["resource_type"] in ("dataset", "document")}
    assert len(offered) == 3
    harvester = create(local, "geonode", remote.url)

    record = act(local, harvester, "updating-harvestable-resources")
    assert record["remote_available"] is True
    listed = harvestable(local, harvester)
    assert set(listed) == set(offered)
    assert {i["title"] for i in listed.values()} == {r["title"] for r in offered.values()}
    assert not any(i["should_be_harvested"] for i in listed.values())
    assert {listed[u]["remote_resource_type"] for u in offered} == {"dataset", "document"}

    points = next(r for r in offered.values() if r["resource_type"] == "dataset"
                  and r["alternate"].endswith(":points"))
    report = next(r for r in offered.values() if r["resource_type"] == "document")
    select(local, harvester, [points["uuid"], report["uuid"]])
    act(local, harvester, "harvesting-resources")

    harvested = local_remote_resources(local)
    assert set(harvested) == {points["title"], report["title"]}
    dataset = harvested[points["title"]]
    assert dataset["resource_type"] == "dataset" and dataset["subtype"] == "remote"
    assert dataset["abstract"] == points["abstract"]
    assert dataset["date"] == points["date"]
    assert dataset["thumbnail_url"] == points["thumbnail_url"]
    assert dataset["extent"]["coords"] == pytest.approx(points["extent"]["coords"])
    assert any(link["link_type"] == "OGC:WMS" and link["url"].startswith(remote.url)
               for link in dataset["links"])
    one = local.get(f"/api/v2/datasets/{dataset['pk']}", headers=ADMIN)
    assert one.status_code == 200 and one.json()["dataset"]["sourcetype"] == "REMOTE"
    assert one.json()["dataset"]["owner"]["username"] == "admin"
    assert one.json()["dataset"]["ows_url"].startswith(f"{remote.url}ows")
    capabilities = local.get("/ows", params={"service": "WMS", "request": "GetCapabilities"})
    assert capabilities.status_code == 200  # remote datasets are not served here
    document = harvested[report["title"]]
    assert document["resource_type"] == "document" and document["abstract"] == "About the remote"
    run = latest_session(local)
    assert run["total_records_to_process"] == run["records_done"] == 2 and run["ended"]

    new_title = f"Renamed points {uuid.uuid4().hex[:6]}"
    remote.patch(points["pk"], title=new_title, abstract="Changed remotely", keywords=["rivers"])
    act(local, harvester, "harvesting-resources")
    harvested = local_remote_resources(local)
    assert set(harvested) == {new_title, report["title"]}
    assert harvested[new_title]["pk"] == dataset["pk"]  # updated in place, not copied again
    assert harvested[new_title]["abstract"] == "Changed remotely"
    assert [k["name"] for k in harvested[new_title]["keywords"]] == ["rivers"]
    assert harvested[report["title"]]["last_updated"] == document["last_updated"]  # unchanged
    assert harvestable(local, harvester)[points["uuid"]]["title"] == new_title



def test_wms_harvest_of_the_remote_ows(remote, local):
    datasets = {r["alternate"]: r for r in remote.resources() if r["resource_type"] == "dataset"}
    harvester = create(local, "wms", f"{remote.url}ows", harvest_new_resources_by_default=True)
    act(local, harvester, "updating-harvestable-resources")
    listed = harvestable(local, harvester)
    assert set(listed) == set(datasets)
    assert all(i["should_be_harvested"] and i["remote_resource_type"] == "dataset"
               for i in listed.values())
    act(local, harvester, "harvesting-resources")
    harvested = local_remote_resources(local)
    assert set(harvested) == {r["title"] for r in datasets.values()}
    for source in datasets.values():
        copy = harvested[source["title"]]
        assert copy["resource_type"] == "dataset" and copy["subtype"] == "remote"
        assert copy["extent"]["coords"] == pytest.approx(source["extent"]["coords"], abs=1e-6)
        assert {"link_type": "OGC:WMS", "url": f"{remote.url}ows"}.items() <= next(
            link for link in copy["links"] if link["link_type"] == "OGC:WMS").items()

    # A change on the remote reaches its capabilities, and the next harvest updates in place.
    source = next(r for r in datasets.values() if r["alternate"].endswith(":points"))
    before = harvested[source["title"]]
    new_title = f"Points seen over WMS {uuid.uuid4().hex[:6]}"
    remote.patch(source["pk"], title=new_title, abstract="Abstract changed remotely")
    try:
        act(local, harvester, "harvesting-resources")
        after = local_remote_resources(local)
        assert set(after) == ({r["title"] for r in datasets.values()} - {source["title"]}) | {new_title}
        assert after[new_title]["pk"] == before["pk"]
        assert after[new_title]["abstract"] == "Abstract changed remotely"
        assert harvestable(local, harvester)[source["alternate"]]["title"] == new_title

        # A remote that stopped answering: unavailable, and nothing harvested is touched.
        listed = harvestable(local, harvester)
        remote.stop()
        try:
            record = act(local, harvester, "harvesting-resources")
            assert record["remote_available"] is False and record["status"] == "ready"
            assert local_remote_resources(local) == after
            assert harvestable(local, harvester) == listed
        finally:
            remote.start(wait=False)
    finally:
        remote.ensure_up()
        remote.patch(source["pk"], title=source["title"], abstract=source["abstract"])


def test_csw_harvest_makes_metadata_only_records(remote, local):
    offered = {r["uuid"]: r for r in remote.resources()}
    harvester = create(local, "csw", f"{remote.url}catalogue/csw",
                       harvest_new_resources_by_default=True)
    act(local, harvester, "updating-harvestable-resources")
    listed = harvestable(local, harvester)
    assert set(listed) == set(offered)
    act(local, harvester, "harvesting-resources")
    harvested = local_remote_resources(local)
    assert set(harvested) == {r["title"] for r in offered.values()}
    assert all(r["metadata_only"] for r in harvested.values())


def test_orphans_are_deleted_when_the_harvester_says_so(remote, local):
    response = httpx_post_document(remote, "Short-lived note")
    harvester = create(local, "geonode", remote.url, harvest_new_resources_by_default=True,
                       delete_orphan_resources_automatically=True,
                       harvester_type_specific_configuration={"harvest_datasets": False})
    act(local, harvester, "harvesting-resources")
    assert "Short-lived note" in local_remote_resources(local)
    remote.delete(response["pk"])
    act(local, harvester, "harvesting-resources")
    harvested = local_remote_resources(local)
    assert "Short-lived note" not in harvested and "Remote report" in harvested
    assert response["uuid"] not in harvestable(local, harvester)


def httpx_post_document(remote: RemoteCatalogue, title: str) -> dict:
    return remote.post_document(title)


def test_scheduled_harvester_checks_availability_by_itself(remote, make_app):
    with TestClient(make_app(HARVESTING_SCHEDULER_INTERVAL=0.2, **LOOPBACK)) as client:
        harvester = create(client, "geonode", remote.url, scheduling_enabled=True)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            record = detail(client, harvester)
            if record["last_checked_harvestable_resources"] and record["status"] == "ready":
                break
            time.sleep(0.1)
        assert record["remote_available"] is True
        assert record["last_checked_availability"] and record["last_checked_harvestable_resources"]
        assert len(harvestable(client, harvester)) == 3
        client.patch(f"/api/v2/harvesters/{harvester}/", json={"scheduling_enabled": False},
                     headers=ADMIN)


def test_abort_stops_a_harvest_between_records(remote, local):
    harvester = create(local, "geonode", remote.url, harvest_new_resources_by_default=True)
    state = local.app.state.cartotheca
    with state.sessions() as session:
        session.query(Harvester).filter_by(id=harvester).update(
            {"status": "aborting-harvesting-resources"})
        session.commit()
        output = runs.harvest(session, state.settings, harvester, None)
    assert output["created"] == output["updated"] == 0 and output["message"] == "aborted"
    assert detail(local, harvester)["status"] == "ready"
    assert len(harvestable(local, harvester)) == 3  # listed before the first record
    assert local_remote_resources(local) == {}


def test_stopped_remote_leaves_the_harvest_untouched(remote, local):
    harvester = create(local, "geonode", remote.url, harvest_new_resources_by_default=True)
    assert act(local, harvester, "harvesting-resources")["remote_available"] is True
    harvested = local_remote_resources(local)
    listed = harvestable(local, harvester)
    assert len(harvested) == len(listed) == 3
    remote.stop()
    try:
        record = act(local, harvester, "harvesting-resources")
        assert record["remote_available"] is False and record["status"] == "ready"
        assert "unavailable" in record["last_check_harvestable_resources_message"]
        assert local_remote_resources(local) == harvested
        assert harvestable(local, harvester) == listed
        assert latest_session(local)["records_done"] == 0
        assert act(local, harvester, "checking-availability")["remote_available"] is False
    finally:
        remote.start(wait=False)  # the next test using the remote waits for it

