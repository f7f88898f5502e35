"""The harvesters, harvestable-resources and harvesting-sessions routes: wire shapes, permissions,
validation, actions started by writing ``status``, and the scheduler's claim."""

from __future__ import annotations

import datetime as dt
import time

import pytest
from fastapi.testclient import TestClient

from cartotheca.catalogue.harvesting.scheduling import enqueue_due_runs
from cartotheca.db.models import ExecutionRequest, HarvestableResource, Harvester, HarvestingSession, User
from tests.conftest import basic
from tests.factories import PASSWORD, make_user

LOOPBACK = {"PROXY_ALLOWED_HOSTS": ["127.0.0.1"], "HARVESTER_ALLOWED_PRIVATE_NETWORKS": ["127.0.0.0/8"]}
NOWHERE = "http://127.0.0.1:9/"  # loopback, nothing listening: a run fails at once
LIST_KEYS = {"id", "name", "status", "remote_url", "remote_available", "scheduling_enabled",
             "harvesting_session_update_frequency", "refresh_harvestable_resources_update_frequency",
             "check_availability_frequency", "default_owner", "links"}
DETAIL_KEYS = LIST_KEYS | {
    "harvester_type", "harvester_type_specific_configuration", "last_checked_availability",
    "last_checked_harvestable_resources", "last_check_harvestable_resources_message",
    "harvest_new_resources_by_default", "delete_orphan_resources_automatically", "last_updated"}


@pytest.fixture
def api(make_app):
    with TestClient(make_app(**LOOPBACK)) as client:
        yield client


def _create(client, admin_auth, **fields) -> dict:
    body = {"name": "remote one", "remote_url": NOWHERE, "harvester_type": "geonode", **fields}
    response = client.post("/api/v2/harvesters/", json=body, headers=admin_auth)
    assert response.status_code == 201, response.text
    return response.json()["harvester"]


def _wait_ready(client, admin_auth, harvester_id: int) -> dict:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        record = client.get(f"/api/v2/harvesters/{harvester_id}/", headers=admin_auth).json()["harvester"]
        if record["status"] == "ready":
            return record
        time.sleep(0.05)
    raise AssertionError(f"still {record['status']}")


def test_list_is_open_and_everything_else_is_for_superusers(api, db, admin_auth):
    created = _create(api, admin_auth)
    assert set(created) == DETAIL_KEYS
    admin_id = db.query(User.id).filter_by(username="admin").scalar()
    assert created["default_owner"] == admin_id and created["status"] == "ready"
    assert created["links"] == {
        "self": f"http://testserver/api/v2/harvesters/{created['id']}/",
        "harvestable_resources": f"http://testserver/api/v2/harvesters/{created['id']}/harvestable-resources/"}

    listed = api.get("/api/v2/harvesters/")
    assert listed.status_code == 200
    body = listed.json()
    assert set(body) == {"links", "total", "page", "page_size", "harvesters"}
    assert body["total"] == 1 and set(body["harvesters"][0]) == LIST_KEYS
    assert api.get("/api/v2/harvesters").json()["harvesters"] == body["harvesters"]
    assert api.get("/api/v2/harvesting-sessions/").status_code == 200
    assert api.get(f"/api/v2/harvesters/{created['id']}/harvestable-resources/").status_code == 200

    user = make_user(db)
    staff = make_user(db, is_staff=True)
    path = f"/api/v2/harvesters/{created['id']}/"
    new = {"name": "x", "remote_url": NOWHERE, "harvester_type": "geonode"}
    assert api.post("/api/v2/harvesters/", json=new).status_code == 401
    for who in (user, staff):
        auth = basic(who.username, PASSWORD)
        assert api.post("/api/v2/harvesters/", json=new, headers=auth).status_code == 403
        assert api.patch(path, json={"name": "y"}, headers=auth).status_code == 403
        assert api.put(path, json=new, headers=auth).status_code == 403
        assert api.get(path, headers=auth).status_code == 403
        assert api.delete(path, headers=auth).status_code == 403
        assert api.patch(f"{path}harvestable-resources/", json=[], headers=auth).status_code == 403
    assert api.get(path).status_code == 401
    assert db.query(Harvester.name).scalar() == "remote one"


def test_superuser_writes_and_validation(api, db, admin_auth):
    created = _create(api, admin_auth, harvester_type_specific_configuration={"harvest_documents": False})
    path = f"/api/v2/harvesters/{created['id']}"
    assert created["harvester_type_specific_configuration"] == {"harvest_documents": False}

    patched = api.patch(path, json={"check_availability_frequency": 5, "scheduling_enabled": True},
                        headers=admin_auth)
    assert patched.status_code == 200
    record = patched.json()["harvester"]
    assert record["check_availability_frequency"] == 5 and record["scheduling_enabled"] is True
    assert record["name"] == "remote one"

    replaced = api.put(f"{path}/", json={"name": "renamed", "remote_url": NOWHERE,
                                         "harvester_type": "wms"}, headers=admin_auth)
    assert replaced.status_code == 200
    assert replaced.json()["harvester"]["harvester_type"] == "wms"
    assert replaced.json()["harvester"]["name"] == "renamed"
    gn_name = "geonode.harvesting.harvesters.geonodeharvester.GeonodeUnifiedHarvesterWorker"
    assert api.patch(path, json={"harvester_type": gn_name}, headers=admin_auth) \
        .json()["harvester"]["harvester_type"] == "geonode"

    _create(api, admin_auth, name="second")
    for bad, word in (({"check_availability_frequency": 0}, "check_availability_frequency"),
                      ({"harvester_type": "ftp"}, "harvester_type"),
                      ({"default_owner": 999999}, "default_owner"),
                      ({"name": "second"}, "name"),
                      ({"scheduling_enabled": "yes"}, "scheduling_enabled"),
                      ({"remote_url": "ftp://127.0.0.1/"}, "http"),
                      ({"status": "bogus"}, "status"),
                      ({"status": "aborting-harvesting-resources"}, "nothing to abort")):
        response = api.patch(path, json=bad, headers=admin_auth)
        assert response.status_code == 400, (bad, response.text)
        assert word in response.json()["errors"][0]
    assert api.post("/api/v2/harvesters/", json={"name": "no url"}, headers=admin_auth).status_code == 400

    assert api.delete(path, headers=admin_auth).status_code == 204
    assert api.get(path, headers=admin_auth).status_code == 404
    assert api.get("/api/v2/harvesters/abc/", headers=admin_auth).status_code == 404


def test_a_private_address_is_refused_unless_allowed(make_app, admin_auth, db):
    with TestClient(make_app(PROXY_ALLOWED_HOSTS=["127.0.0.1", "10.11.12.13"])) as client:
        body = {"name": "inward", "remote_url": "http://127.0.0.1:9/", "harvester_type": "geonode"}
        response = client.post("/api/v2/harvesters/", json=body, headers=admin_auth)
        assert response.status_code == 400
        message = response.json()["errors"][0]
        assert "loopback" in message and "HARVESTER_ALLOWED_PRIVATE_NETWORKS" in message
        body["remote_url"] = "http://10.11.12.13/"
        assert "private" in client.post("/api/v2/harvesters/", json=body, headers=admin_auth) \
            .json()["errors"][0]
        body["remote_url"] = "http://geonode.example.org/"
        assert "PROXY_ALLOWED_HOSTS" in client.post("/api/v2/harvesters/", json=body,
                                                   headers=admin_auth).json()["errors"][0]
        # one stored while loopback was allowed is refused at run time, before any connection
        admin_id = db.query(User.id).filter_by(username="admin").scalar()
        harvester = Harvester(name="stored", remote_url="http://127.0.0.1:9/", harvester_type="geonode",
                              default_owner_id=admin_id, remote_available=True)
        db.add(harvester)
        db.commit()
        response = client.patch(f"/api/v2/harvesters/{harvester.id}/",
                                json={"status": "updating-harvestable-resources"}, headers=admin_auth)
        assert response.status_code == 200
        record = _wait_ready(client, admin_auth, harvester.id)
        assert record["remote_available"] is False
        assert "loopback" in record["last_check_harvestable_resources_message"]


def test_status_starts_actions_once_and_aborts(api, db, admin_auth):
    created = _create(api, admin_auth)
    path = f"/api/v2/harvesters/{created['id']}/"
    response = api.patch(path, json={"status": "checking-availability"}, headers=admin_auth)
    assert response.status_code == 200
    record = _wait_ready(api, admin_auth, created["id"])
    assert record["remote_available"] is False and record["last_checked_availability"]

    db.query(Harvester).filter_by(id=created["id"]).update({"status": "harvesting-resources"})
    db.commit()
    busy = api.patch(path, json={"status": "updating-harvestable-resources"}, headers=admin_auth)
    assert busy.status_code == 409
    aborted = api.patch(path, json={"status": "aborting-harvesting-resources"}, headers=admin_auth)
    assert aborted.status_code == 200
    assert aborted.json()["harvester"]["status"] == "aborting-harvesting-resources"
    assert db.query(ExecutionRequest).filter(ExecutionRequest.func_name.like("harvester_%")).count() == 1


def test_harvestable_resources_list_and_selection(api, db, admin_auth):
    created = _create(api, admin_auth)
    for n, title in enumerate(("Rivers", "Roads", "Lakes")):
        db.add(HarvestableResource(harvester_id=created["id"], unique_identifier=f"id-{n}", title=title,
                                   remote_resource_type="dataset", remote_data={}))
    db.add(HarvestingSession(harvester_id=created["id"], total_records_to_process=3, records_done=1))
    db.commit()
    path = f"/api/v2/harvesters/{created['id']}/harvestable-resources/"
    listed = api.get(path).json()
    assert [i["title"] for i in listed["harvestable_resources"]] == ["Lakes", "Rivers", "Roads"]
    assert set(listed["harvestable_resources"][0]) == {
        "unique_identifier", "title", "should_be_harvested", "last_updated", "status",
        "remote_resource_type"}
    assert api.get(path, params={"filter{title.icontains}": "ro"}).json()["total"] == 1

    chosen = api.patch(path, json=[{"unique_identifier": "id-0", "should_be_harvested": True}],
                       headers=admin_auth)
    assert chosen.status_code == 200 and chosen.json()[0]["should_be_harvested"] is True
    assert api.get(path, params={"filter{should_be_harvested}": "true"}).json()["total"] == 1
    for bad in ([{"unique_identifier": "nope", "should_be_harvested": True}],
                [{"unique_identifier": "id-1", "should_be_harvested": "yes"}], {"x": 1}):
        assert api.patch(path, json=bad, headers=admin_auth).status_code == 400
    assert api.get("/api/v2/harvesters/999999/harvestable-resources/").status_code == 404

    sessions = api.get("/api/v2/harvesting-sessions/").json()
    assert sessions["total"] == 1
    item = sessions["asynchronous_harvesting_sessions"][0]
    assert set(item) == {"id", "started", "updated", "ended", "total_records_to_process", "records_done"}
    one = api.get(f"/api/v2/harvesting-sessions/{item['id']}", headers=admin_auth)
    assert one.json()["asynchronous_harvesting_session"]["records_done"] == 1
    assert api.get(f"/api/v2/harvesting-sessions/{item['id']}").status_code == 401


def test_enqueue_due_runs_claims_each_action_once(db, settings):
    admin_id = db.query(User.id).filter_by(username="admin").scalar()
    scheduled = Harvester(name="scheduled", remote_url=NOWHERE, harvester_type="geonode",
                          default_owner_id=admin_id, scheduling_enabled=True,
                          check_availability_frequency=10)
    idle = Harvester(name="idle", remote_url=NOWHERE, harvester_type="geonode", default_owner_id=admin_id)
    db.add_all([scheduled, idle])
    db.commit()
    now = dt.datetime(2030, 1, 1, 12, 0)

    first = enqueue_due_runs(db, settings, now)
    db.commit()
    assert len(first) == 1
    execution = db.query(ExecutionRequest).filter_by(exec_id=first[0]).one()
    assert execution.func_name == "harvester_check_availability"
    assert execution.input_params == {"harvester_id": scheduled.id}
    assert enqueue_due_runs(db, settings, now) == []  # already claimed: busy

    def reset():
        db.query(Harvester).filter_by(id=scheduled.id).update({"status": "ready"})
        db.commit()

    reset()
    second = enqueue_due_runs(db, settings, now)
    db.commit()
    assert [db.query(ExecutionRequest.func_name).filter_by(exec_id=i).scalar() for i in second] \
        == ["harvester_refresh"]
    reset()
    third = enqueue_due_runs(db, settings, now + dt.timedelta(minutes=1))
    db.commit()
    assert [db.query(ExecutionRequest.func_name).filter_by(exec_id=i).scalar() for i in third] \
        == ["harvester_harvest"]
    reset()
    assert enqueue_due_runs(db, settings, now + dt.timedelta(minutes=5)) == []
    later = enqueue_due_runs(db, settings, now + dt.timedelta(minutes=10))
    assert [db.query(ExecutionRequest.func_name).filter_by(exec_id=i).scalar() for i in later] \
        == ["harvester_check_availability"]
    db.rollback()
    assert db.get(Harvester, idle.id).last_checked_availability is None
    assert db.query(HarvestingSession).filter_by(harvester_id=scheduled.id).count() == 2


def test_lists_cost_the_same_statements_whatever_the_page_size(client, db, count_statements):
    admin_id = db.query(User.id).filter_by(username="admin").scalar()
    for n in range(6):
        harvester = Harvester(name=f"h{n}", remote_url=NOWHERE, harvester_type="geonode",
                              default_owner_id=admin_id)
        db.add(harvester)
        db.flush()
        db.add(HarvestableResource(harvester_id=harvester.id, unique_identifier=f"r{n}", title=f"r{n}",
                                   remote_resource_type="dataset", remote_data={}))
        db.add(HarvestingSession(harvester_id=harvester.id))
    db.commit()
    first = db.query(Harvester.id).order_by(Harvester.id).first()[0]
    for path in ("/api/v2/harvesters/", "/api/v2/harvesting-sessions/",
                 f"/api/v2/harvesters/{first}/harvestable-resources/"):
        counts = []
        for size in (1, 5):
            with count_statements() as n:
                assert client.get(path, params={"page_size": size}).status_code == 200
            counts.append(n.value)
        assert counts[0] == counts[1] <= 3, (path, counts)


def test_a_harvester_left_busy_by_a_dead_execution_is_released(db, settings):
    admin_id = db.query(User.id).filter_by(username="admin").scalar()
    now = dt.datetime(2030, 1, 1, 12, 0)
    long_ago = now - dt.timedelta(hours=1)
    stuck, running = (Harvester(name=name, remote_url=NOWHERE, harvester_type="geonode",
                                default_owner_id=admin_id, status="harvesting-resources",
                                last_updated=long_ago) for name in ("stuck", "running"))
    db.add_all([stuck, running])
    db.flush()
    db.add(ExecutionRequest(func_name="harvester_harvest", status="running",
                            input_params={"harvester_id": running.id}, output_params={}))
    db.add(ExecutionRequest(func_name="harvester_harvest", status="failed",
                            input_params={"harvester_id": stuck.id}, output_params={}))
    db.commit()
    assert enqueue_due_runs(db, settings, now) == []
    db.commit()
    db.expire_all()
    assert db.get(Harvester, stuck.id).status == "ready"
    assert db.get(Harvester, running.id).status == "harvesting-resources"
