"""The monitoring API end to end: real catalogue and OWS traffic, a collection cycle, then the
metrics, exceptions and notification endpoints read back through HTTP.

Every test runs on SQLite and PostgreSQL (the app fixtures do that).
"""

from __future__ import annotations

import datetime as dt
import json
from collections import defaultdict

import pytest
from fastapi.testclient import TestClient

from cartotheca.db.base import utcnow
from cartotheca.db.models import MonitoredService, NotificationCheck
from cartotheca.monitoring.periods import align_end, align_start
from tests.conftest import basic
from tests.factories import PASSWORD, make_user
from tests.geodata.fixtures import publish_file, write_polygons
from tests.support.monitoring import collect

API = "/monitoring/api"


def envelope_ok(response) -> dict:
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["status"], body["success"], body["errors"]) == ("ok", True, {})
    return body


def metric_rows(client, admin_auth, metric: str, **params) -> list[dict]:
    """Every row of every period of one metric_data answer."""
    body = envelope_ok(client.get(f"{API}/metric_data/{metric}/", params=params, headers=admin_auth))
    return [row for period in body["data"]["data"] for row in period["data"]]


def totals(rows: list[dict], key: str) -> dict:
    """Rows summed per key over periods (counts add up)."""
    out: dict = defaultdict(float)
    for row in rows:
        k = row[key]["name"] if key == "resource" else row[key]
        out[k] += float(row["val"])
    return dict(out)


def weighted(rows: list[dict]) -> float:
    """An average over several periods' averages, weighted by their samples."""
    samples = sum(r["samples_count"] for r in rows)
    return sum(float(r["val"]) * r["samples_count"] for r in rows) / samples


@pytest.fixture
def traffic(monitored, db, settings, tmp_path):  # noqa: F811
    """Six real requests: two anonymous catalogue lists, one detail view by a user, a WMS
    GetMap, a WFS GetFeature and a download of a published dataset; then a collection cycle."""
    app, client = monitored
    started = utcnow()
    alice = make_user(db, "alice", email="alice@example.org")
    polygons = publish_file(db, settings, alice, write_polygons(tmp_path), title="Polygons")
    layer = polygons.alternate
    responses = [
        client.get("/api/v2/resources", headers={"User-Agent": "agent-a"}),
        client.get("/api/v2/resources", headers={"User-Agent": "agent-a"}),
        client.get(f"/api/v2/resources/{polygons.id}",
                   headers={"User-Agent": "agent-b", **basic("alice", PASSWORD)}),
        client.get("/ows", headers={"User-Agent": "QGIS/3.34"}, params={
            "service": "WMS", "version": "1.1.1", "request": "GetMap", "layers": layer, "styles": "",
            "bbox": "0,40,20,60", "srs": "EPSG:4326", "width": "64", "height": "64",
            "format": "image/png"}),
        client.get("/ows", headers={"User-Agent": "OWSLib/0.35"}, params={
            "service": "WFS", "version": "2.0.0", "request": "GetFeature", "typeNames": layer,
            "outputFormat": "application/json"}),
        client.get(f"/datasets/{layer}/dataset_download", headers={"User-Agent": "wget/1.21"}),
    ]
    assert [r.status_code for r in responses] == [200] * 6, [r.text[:200] for r in responses]
    report = collect(app)
    assert report.recorded == 6
    window = {"valid_from": (started - dt.timedelta(seconds=1)).isoformat(),
              "valid_to": utcnow().isoformat(), "interval": 3600}
    return client, polygons, responses, window


def test_request_count_per_event_type_resource_and_label(traffic, admin_auth):
    client, polygons, _, window = traffic
    overall = metric_rows(client, admin_auth, "request.count", **window)
    assert totals(overall, "label") == {"count": 6.0}
    by_event = metric_rows(client, admin_auth, "request.count", group_by="event_type", **window)
    # A WFS GetFeature is an OWS request and a download.
    assert totals(by_event, "event_type") == {
        "all": 6, "other": 4, "view": 3, "download": 2, "OWS:ALL": 2, "OWS:WMS": 1, "OWS:WFS": 1}
    # The layer: the detail view, the GetMap, the GetFeature and the download.
    layer = metric_rows(client, admin_auth, "request.count", resource=f"layer={polygons.alternate}",
                        **window)
    assert totals(layer, "label") == {"count": 4.0}
    by_resource = metric_rows(client, admin_auth, "request.count", group_by="resource",
                              resource_type="layer", **window)
    assert totals(by_resource, "resource") == {polygons.alternate: 4.0}
    assert all(r["label"] == "count" and r["resource"]["type"] == "layer" for r in by_resource)
    urls = metric_rows(client, admin_auth, "request.count", group_by="resource", resource_type="url",
                       **window)
    assert totals(urls, "resource") == {"/api/v2/resources": 2.0}
    ows_on_layer = metric_rows(client, admin_auth, "request.count", event_type="OWS:ALL",
                               resource=f"layer={polygons.alternate}", **window)
    assert totals(ows_on_layer, "label") == {"count": 2.0}


def test_labelled_metrics_user_agents_paths_statuses(traffic, admin_auth):
    client, polygons, _, window = traffic
    agents = metric_rows(client, admin_auth, "request.ua", **window)
    assert totals(agents, "label") == {"agent-a": 2, "agent-b": 1, "QGIS/3.34": 1, "OWSLib/0.35": 1,
                                       "wget/1.21": 1}
    only_a = metric_rows(client, admin_auth, "request.ua", label="agent-a", **window)
    assert totals(only_a, "label") == {"agent-a": 2}
    ows_agents = metric_rows(client, admin_auth, "request.ua", event_type="OWS:ALL", **window)
    assert totals(ows_agents, "label") == {"QGIS/3.34": 1, "OWSLib/0.35": 1}
    families = metric_rows(client, admin_auth, "request.ua.family", **window)
    assert totals(families, "label")["QGIS"] == 1
    paths = metric_rows(client, admin_auth, "request.path", **window)
    assert totals(paths, "label") == {"/api/v2/resources": 2, f"/api/v2/resources/{polygons.id}": 1,
                                      "/ows": 2, f"/datasets/{polygons.alternate}/dataset_download": 1}
    assert totals(metric_rows(client, admin_auth, "response.status", **window), "label") == {"200": 6}
    assert totals(metric_rows(client, admin_auth, "request.method", **window), "label") == {"GET": 6}


def test_request_users_counts_tracking_ids(traffic, admin_auth):
    client, polygons, _, window = traffic
    # Five visitors: anonymous agent-a (twice), alice, and anonymous QGIS, OWSLib and wget.
    users = metric_rows(client, admin_auth, "request.users", group_by="label", **window)
    assert sum(r["val"] for r in users) == 5 and all(isinstance(r["val"], int) for r in users)
    assert sum(r["samples_count"] for r in users) == 6
    per_label = metric_rows(client, admin_auth, "request.users", **window)
    assert sorted(float(r["val"]) for r in per_label) == [1.0, 1.0, 1.0, 1.0, 2.0]
    for group_by in ("resource_no_labels", "resource_no_label"):
        rows = metric_rows(client, admin_auth, "request.users", group_by=group_by, resource_type="layer",
                           **window)
        assert [(r["resource"]["name"], r["val"]) for r in rows] == [(polygons.alternate, 4)]
        assert all("label" not in r for r in rows)
    by_event = metric_rows(client, admin_auth, "request.users", group_by="event_type_on_label", **window)
    assert {r["event_type"]: r["val"] for r in by_event if r["event_type"] in ("all", "other", "OWS:ALL")} \
        == {"all": 5, "other": 3, "OWS:ALL": 2}


def test_response_size_and_time(traffic, admin_auth):
    client, _, responses, window = traffic
    sizes = [len(r.content) for r in responses]
    size = metric_rows(client, admin_auth, "response.size", **window)
    assert weighted(size) == pytest.approx(sum(sizes) / 6, abs=1e-3)
    assert sum(r["samples_count"] for r in size) == 6
    ows = metric_rows(client, admin_auth, "response.size", event_type="OWS:ALL", **window)
    assert weighted(ows) == pytest.approx((sizes[3] + sizes[4]) / 2, abs=1e-3)
    time = metric_rows(client, admin_auth, "response.time", **window)
    assert sum(r["samples_count"] for r in time) == 6
    for row in time:
        assert 0 < float(row["min"]) <= float(row["val"]) <= float(row["max"]) < 60_000  # ms
    body = envelope_ok(client.get(f"{API}/metric_data/response.time/", params=window, headers=admin_auth))
    assert (body["data"]["type"], body["data"]["axis_label"], body["data"]["metric"]) == (
        "rate", "ms", "response.time")


def test_alignment_of_a_short_window_with_a_longer_interval(traffic, admin_auth):
    client, _, _, _ = traffic
    now = utcnow()
    valid_from = now - dt.timedelta(minutes=2)
    body = envelope_ok(client.get(f"{API}/metric_data/request.count/", headers=admin_auth, params={
        "valid_from": valid_from.isoformat(), "valid_to": now.isoformat(), "interval": 300}))
    data = body["data"]
    assert data["interval"] == 300.0
    assert data["input_valid_from"].startswith(valid_from.strftime("%Y-%m-%dT%H:%M:%S"))
    # Every 5-minute period the 2 minutes touch, aligned from midnight.
    expected, start = [], align_start(valid_from, 300)
    while start < align_end(now, 300):
        expected.append((start, start + dt.timedelta(seconds=300)))
        start += dt.timedelta(seconds=300)
    got = [(p["valid_from"], p["valid_to"]) for p in data["data"]]
    assert got == [(a.strftime("%Y-%m-%dT%H:%M:%SZ"), b.strftime("%Y-%m-%dT%H:%M:%SZ")) for a, b in expected]
    assert sum(float(r["val"]) for p in data["data"] for r in p["data"]) == 6
    # ``last`` is the same window counted back from now; a window under a period is one period.
    last = envelope_ok(client.get(f"{API}/metric_data/request.count/", headers=admin_auth,
                                  params={"last": 120, "interval": 300}))
    assert 1 <= len(last["data"]["data"]) <= 2
    point = envelope_ok(client.get(f"{API}/metric_data/request.count/", headers=admin_auth,
                                   params={"valid_from": now.isoformat(), "valid_to": now.isoformat()}))
    assert len(point["data"]["data"]) == 1 and point["data"]["interval"] == 60.0
    # Longer than a day without an interval: hourly (GeoNode's default).
    days = envelope_ok(client.get(f"{API}/metric_data/request.count/", headers=admin_auth, params={
        "valid_from": (now - dt.timedelta(days=2)).isoformat(), "valid_to": now.isoformat()}))
    assert days["data"]["interval"] == 3600.0 and len(days["data"]["data"]) in (48, 49)
    assert sum(float(r["val"]) for p in days["data"]["data"] for r in p["data"]) == 6


@pytest.mark.parametrize(("params", "field"), [
    ({"last": 600, "valid_from": "2026-01-01"}, "__all__"),
    ({"group_by": "colour"}, "group_by"),
    ({"interval": 10}, "interval"),
    ({"valid_from": "yesterday"}, "valid_from"),
    ({"event_type": "OWS:XYZ"}, "event_type"),
    ({"resource_type": "planet"}, "resource_type"),
    ({"service": "nowhere"}, "service"),
    ({"label": "no such label"}, "label"),
    ({"resource": "layer=geonode:none"}, "resource"),
    ({"resource": "1", "group_by": "resource"}, None),
])
def test_metric_data_rejects_bad_parameters(monitored, admin_auth, params, field):  # noqa: F811
    app, client = monitored
    client.get("/api/v2/resources")
    collect(app)
    if params.get("resource") == "1":
        any_id = envelope_ok(client.get(f"{API}/resources/", headers=admin_auth))["resources"][0]["id"]
        params, field = {"resource": str(any_id), "group_by": "resource"}, "resource"
    response = client.get(f"{API}/metric_data/request.count/", params=params, headers=admin_auth)
    assert response.status_code == 400, response.text
    body = response.json()
    assert (body["status"], body["success"], body["data"]) == ("error", False, [])
    assert field in body["errors"] and isinstance(body["errors"][field], list)


def test_unknown_metric_is_a_404_envelope(monitored, admin_auth):  # noqa: F811
    _, client = monitored
    response = client.get(f"{API}/metric_data/no.such.metric/", headers=admin_auth)
    assert response.status_code == 404
    assert response.json()["errors"] == {"metric_name": ["Metric no.such.metric doesn't exist"]}


def test_lists_of_hosts_services_resources_labels(traffic, admin_auth, db):
    client, polygons, _, _ = traffic
    hosts = envelope_ok(client.get(f"{API}/hosts/", headers=admin_auth))["hosts"]
    assert len(hosts) == 1 and set(hosts[0]) == {"name", "ip"}
    services = envelope_ok(client.get(f"{API}/services", headers=admin_auth))["services"]
    assert sorted(s["type"] for s in services) == ["core", "hostcore", "mapserver"]
    core = next(s for s in services if s["type"] == "core")
    assert core["check_interval"] == 60 and core["host"] == hosts[0]["name"]
    assert core["last_check"].endswith("Z")  # the cycle recorded it
    resources = envelope_ok(client.get(f"{API}/resources/", headers=admin_auth,
                                       params={"metric_name": "request.count"}))["resources"]
    assert {(r["type"], r["name"]) for r in resources} == {("layer", polygons.alternate),
                                                           ("url", "/api/v2/resources")}
    layers = envelope_ok(client.get(f"{API}/resources/", headers=admin_auth,
                                    params={"resource_type": "layer"}))["resources"]
    assert [r["name"] for r in layers] == [polygons.alternate]
    labels = envelope_ok(client.get(f"{API}/labels/", headers=admin_auth,
                                    params={"metric_name": "request.ua"}))["labels"]
    assert {label["name"] for label in labels} == {"agent-a", "agent-b", "QGIS/3.34", "OWSLib/0.35",
                                                   "wget/1.21"}
    future = envelope_ok(client.get(f"{API}/labels/", headers=admin_auth, params={
        "metric_name": "request.ua", "valid_from": (utcnow() + dt.timedelta(hours=1)).isoformat()}))
    assert future["labels"] == []
    bad = client.get(f"{API}/labels/", headers=admin_auth, params={"metric_name": "nope"})
    assert bad.status_code == 400 and "metric_name" in bad.json()["errors"]


def test_types_and_metrics(monitored, admin_auth):  # noqa: F811
    _, client = monitored
    types = envelope_ok(client.get(f"{API}/resource_types/", headers=admin_auth))["resource_types"]
    assert {"type": "Layer", "name": "layer"} in types and {"type": "No resource", "name": ""} in types
    assert {t["name"] for t in types} == {"", "layer", "map", "resource_base", "document", "style",
                                          "admin", "url", "other"}
    every = envelope_ok(client.get(f"{API}/event_types/", headers=admin_auth))["event_types"]
    assert {"name": "OWS:WMS", "type_label": "WMS"} in every and len(every) == 20
    for flag in ("true", "True", "1"):
        ows = envelope_ok(client.get(f"{API}/event_types/", params={"ows_service": flag},
                                     headers=admin_auth))["event_types"]
        assert ows and all(e["name"].startswith("OWS:") for e in ows)
    for flag in ("false", "False", "0"):
        other = envelope_ok(client.get(f"{API}/event_types/", params={"ows_service": flag},
                                       headers=admin_auth))["event_types"]
        assert {e["name"] for e in other} >= {"all", "other", "download", "view", "geoserver"}
        assert not any(e["name"].startswith("OWS:") for e in other)
    bad = client.get(f"{API}/event_types/", params={"ows_service": "maybe"}, headers=admin_auth)
    assert bad.status_code == 400
    assert bad.json()["errors"] == {"ows_service": ["Invalid ows_service value maybe"]}
    groups = envelope_ok(client.get(f"{API}/metrics/", headers=admin_auth))["metrics"]
    by_service = {g["service"]: {m["name"]: m for m in g["metrics"]} for g in groups}
    assert set(by_service) == {"core", "mapserver", "hostcore", "hostmapserver"}
    assert by_service["core"]["request.count"] == {"name": "request.count", "unit": "Count", "type": "count"}
    assert by_service["hostcore"]["network.in.rate"]["unit"] == "B/s"
    # the specification's three types only: a level such as free memory is a value
    assert {m["type"] for g in groups for m in g["metrics"]} == {"count", "value", "rate"}
    assert by_service["hostcore"]["mem.free"]["type"] == "value"
    level = envelope_ok(client.get(f"{API}/metric_data/mem.free/", headers=admin_auth,
                                   params={"last": "3600", "interval": "3600"}))
    assert level["data"]["type"] == "value"


def test_staff_only(monitored, db):  # noqa: F811
    _, client = monitored
    make_user(db, "bob")
    staff = make_user(db, "sam", is_staff=True)
    anonymous = client.get(f"{API}/hosts/")
    assert anonymous.status_code == 401 and anonymous.headers["WWW-Authenticate"].startswith("Basic")
    assert anonymous.json()["success"] is False and "user" in anonymous.json()["errors"]
    regular = client.get(f"{API}/metric_data/request.count/", headers=basic("bob", PASSWORD))
    assert regular.status_code == 403 and regular.json()["data"] == []
    assert client.get(f"{API}/hosts/", headers=basic(staff.username, PASSWORD)).status_code == 200


def test_autoconfigure_is_for_staff_and_superusers(monitored, db, admin_auth):  # noqa: F811
    app, client = monitored
    make_user(db, "bob")
    make_user(db, "sam", is_staff=True)
    assert client.post(f"{API}/autoconfigure/").status_code == 401
    assert client.post(f"{API}/autoconfigure/", headers=basic("bob", PASSWORD)).status_code == 403
    db.query(MonitoredService).delete()
    db.commit()
    assert envelope_ok(client.get(f"{API}/services/", headers=admin_auth))["services"] == []
    for who in (basic("sam", PASSWORD), admin_auth):
        body = envelope_ok(client.post(f"{API}/autoconfigure/", headers=who))
        assert body == {"status": "ok", "success": True, "errors": {}}
    services = envelope_ok(client.get(f"{API}/services/", headers=admin_auth))["services"]
    settings = app.state.cartotheca.settings
    assert len(services) == 3 and all(s["check_interval"] == settings.MONITORING_COLLECTION_INTERVAL
                                      for s in services)


def test_server_errors_are_captured_with_their_request(make_app, admin_auth):
    app = make_app(MONITORING_FLUSH_INTERVAL=3600)

    def broken():
        raise ZeroDivisionError("division by zero in a handler")

    app.add_api_route("/api/v2/broken", broken, methods=["GET"])
    with TestClient(app, raise_server_exceptions=False) as client:
        failed = client.get("/api/v2/broken?x=1", headers={"User-Agent": "curl/8.5"})
        assert failed.status_code == 500
        assert client.get("/api/v2/resources/999999", headers=admin_auth).status_code == 404
        app.state.monitoring.collector.flush()
        listed = envelope_ok(client.get(f"{API}/exceptions/", headers=admin_auth))["exceptions"]
        assert len(listed) == 1
        item = listed[0]
        assert item["error_type"] == "ZeroDivisionError" and item["service"]["type"] == "core"
        assert item["url"] == f"{API}/exceptions/{item['id']}/"
        detail = envelope_ok(client.get(item["url"], headers=admin_auth))
        assert detail["error_message"] == "division by zero in a handler"
        assert "Traceback" in detail["error_data"] and "in broken" in detail["error_data"]
        request = detail["request"]
        assert request["request"]["path"] == "/api/v2/broken?x=1"
        assert (request["request"]["method"], request["request"]["host"]) == ("GET", "testserver")
        assert request["response"]["status"] == 500 and request["response"]["time"] >= 0
        assert request["client"]["user_agent"] == "curl/8.5"
        assert request["client"]["user_agent_family"] == "curl"
        assert request["client"]["ip"] == "testclient"
        filtered = envelope_ok(client.get(f"{API}/exceptions/", headers=admin_auth,
                                          params={"error_type": "KeyError"}))
        assert filtered["exceptions"] == []
        missing = client.get(f"{API}/exceptions/999999/", headers=admin_auth)
        assert missing.status_code == 404
        assert missing.json()["errors"] == {"exception_id": ["Object not found"]}
        # The error is counted too.
        collect(app)
        errors = metric_rows(client, admin_auth, "response.error.types", last=3600)
        assert totals(errors, "label") == {"ZeroDivisionError": 1}
        # Each path answered with an error status (4xx too), for the dashboard's endpoints.
        paths = metric_rows(client, admin_auth, "response.error.path", last=3600)
        assert totals(paths, "label") == {"/api/v2/broken": 1, "/api/v2/resources/999999": 1}
        by_type = metric_rows(client, admin_auth, "response.error.path", last=3600, group_by="event_type")
        assert totals(by_type, "event_type")["other"] == 2


# -- notifications ---------------------------------------------------------------------------

def create_response_time_check(client, admin_auth, emails: str, overrides: dict | None = None):
    payload = {"name": "Slow responses", "description": "Responses take too long", "severity": "error",
               "emails": emails, "user_thresholds": json.dumps([
                   ["response.time", "max_value", False, False, False, False, 0, None, None,
                    "Response time is above"],
                   ["request.count", "min_value", True, True, False, True, 0, 100, 4, "Requests below"]]),
               **(overrides or {})}
    return client.post(f"{API}/notifications/", data=payload, headers=admin_auth)


def test_a_breached_threshold_mails_once_within_its_grace_period(make_app, admin_auth, db,
                                                                 smtp_server):  # noqa: F811
    mailbox, port = smtp_server
    make_user(db, "carol", email="carol@example.org")
    app = make_app(MONITORING_FLUSH_INTERVAL=3600, EMAIL_HOST="127.0.0.1", EMAIL_PORT=port,
                   DEFAULT_FROM_EMAIL="monitor@example.org")
    with TestClient(app) as client:
        created = envelope_ok(create_response_time_check(client, admin_auth,
                                                         "ops@example.org\ncarol@example.org"))
        check = created["data"]
        assert check["user_threshold"]["response.time.max_value"] == {
            "metric": "response.time", "description": "Response time is above", "min": 0, "max": None,
            "steps": None}
        assert check["grace_period"] == {"class": "datetime.timedelta", "seconds": 600.0}
        assert {r["user"] for r in check["receivers"]} == {None, "carol"}
        form = envelope_ok(client.get(f"{API}/notifications/config/{check['id']}/", headers=admin_auth))
        fields = {f["field_name"]: f for f in form["data"]["fields"]}
        assert fields["response.time.max_value"]["unit"] == "ms"
        assert fields["response.time.max_value"]["is_enabled"] is False
        assert fields["request.count.min_value"]["steps_calculated"] == ["0", "25", "50", "75"]
        assert 'name="response.time.max_value"' in form["data"]["form"]
        configured = envelope_ok(client.post(
            f"{API}/notifications/config/{check['id']}/", headers=admin_auth,
            data={"response.time.max_value": "0.0001", "emails": "ops@example.org\ncarol@example.org",
                  "grace_period": "01:00:00"}))
        assert configured["data"]["grace_period"]["seconds"] == 3600.0
        form = envelope_ok(client.get(f"{API}/notifications/config/{check['id']}/", headers=admin_auth))
        field = next(f for f in form["data"]["fields"] if f["field_name"] == "response.time.max_value")
        assert field["is_enabled"] is True and field["current_value"] == 0.0001

        for _ in range(3):
            assert client.get("/api/v2/resources").status_code == 200
        first = collect(app)
        assert first.mailed == [check["id"]]
        assert mailbox.recipients() == ["carol@example.org", "ops@example.org"]
        rcpt, message = mailbox.messages[0]
        assert message["From"] == "monitor@example.org" and message["To"] == rcpt[0]
        assert "Slow responses" in message["Subject"] and "error" in message["Subject"]
        text = message.get_payload(decode=True).decode()
        assert "response.time" in text and "at most 0.0001 ms" in text

        status = envelope_ok(client.get(f"{API}/status/", headers=admin_auth))["data"]
        assert [s["check"]["id"] for s in status] == [check["id"]]
        problem = status[0]["problems"][0]
        assert problem["name"] == "response.time" and problem["threshold_value"] == 0.0001
        assert problem["offending_value"] > 0.0001 and problem["severity"] == "error"
        assert status[0]["check"]["last_send"] is not None
        notes = envelope_ok(client.get(f"{API}/notifications/", headers=admin_auth))["data"]
        assert notes["health_level"] == "error"
        assert notes["problems"][0]["check_url"] == f"{API}/notifications/config/{check['id']}/"

        # Still failing on the next cycle, but within the grace period: no second mail.
        client.get("/api/v2/resources")
        second = collect(app)
        assert second.alerts and second.mailed == []
        assert len(mailbox.messages) == 2
        # Once the grace period is over, the receivers hear again.
        later = collect(app, now=utcnow() + dt.timedelta(hours=1, minutes=1))
        assert later.mailed == [check["id"]] and len(mailbox.messages) == 4


def test_nothing_wrong_means_no_problem(monitored, admin_auth):  # noqa: F811
    app, client = monitored
    check = envelope_ok(create_response_time_check(client, admin_auth, "ops@example.org"))["data"]
    envelope_ok(client.post(f"{API}/notifications/config/{check['id']}/", headers=admin_auth,
                            data={"response.time.max_value": "600000"}))
    client.get("/api/v2/resources")
    assert collect(app).alerts == []
    assert envelope_ok(client.get(f"{API}/status/", headers=admin_auth))["data"] == []
    notes = envelope_ok(client.get(f"{API}/notifications/", headers=admin_auth))["data"]
    assert notes["problems"] == [] and notes["health_level"] == "ok"
    assert [c["name"] for c in notes["checks"]] == ["Slow responses"]


@pytest.mark.parametrize(("change", "field"), [
    ({"name": ""}, "name"),
    ({"description": ""}, "description"),
    ({"severity": "panic"}, "severity"),
    ({"emails": "not-an-address"}, "emails"),
    ({"user_thresholds": "[not json"}, "user_thresholds"),
    ({"user_thresholds": '[["response.time", "max_value", false, false, false, false, 0, null, null]]'},
     "user_thresholds"),
    ({"user_thresholds": '[["no.metric", "max_value", false, false, false, false, 0, null, null, "x"]]'},
     "user_thresholds"),
    ({"user_thresholds": '[["response.time", "above", false, false, false, false, 0, null, null, "x"]]'},
     "user_thresholds"),
    ({"user_thresholds": ""}, "user_thresholds"),
])
def test_a_malformed_creation_payload_creates_nothing(monitored, admin_auth, db, change, field):  # noqa: F811
    _, client = monitored
    response = create_response_time_check(client, admin_auth, "ops@example.org", change)
    assert response.status_code == 400, response.text
    body = response.json()
    assert (body["status"], body["success"], body["data"]) == ("error", False, [])
    assert field in body["errors"] and all(isinstance(m, str) for m in body["errors"][field])
    assert db.query(NotificationCheck).count() == 0


def test_names_are_unique_and_the_form_validates_values(monitored, admin_auth):  # noqa: F811
    _, client = monitored
    check = envelope_ok(create_response_time_check(client, admin_auth, ""))["data"]
    again = create_response_time_check(client, admin_auth, "")
    assert again.status_code == 400 and "name" in again.json()["errors"]
    url = f"{API}/notifications/config/{check['id']}/"
    envelope_ok(client.post(url, headers=admin_auth, data={"response.time.max_value": "250"}))
    for data, field in (({"response.time.max_value": "-1"}, "response.time.max_value"),
                        ({"request.count.min_value": "30"}, "request.count.min_value"),
                        ({"severity": "bad"}, "severity"),
                        ({"grace_period": "soon"}, "grace_period")):
        bad = client.post(url, headers=admin_auth, data=data)
        assert bad.status_code == 400 and field in bad.json()["errors"], bad.text
    # The failed posts left the earlier threshold alone.
    form = envelope_ok(client.get(url, headers=admin_auth))["data"]
    assert {f["field_name"]: f["current_value"] for f in form["fields"]} == {
        "response.time.max_value": 250.0, "request.count.min_value": None}
    envelope_ok(client.post(url, headers=admin_auth,
                            data={"request.count.min_value": "25", "active": "false"}))
    form = envelope_ok(client.get(url, headers=admin_auth))["data"]
    assert form["notification"]["active"] is False
    assert client.get(f"{API}/notifications/config/424242/", headers=admin_auth).status_code == 404
