"""Captured requests written as request events: resources named, users tracked anonymously."""

from __future__ import annotations

import dataclasses

from sqlalchemy import func, select

from cartotheca.db.models import MetricValue, MonitoredResource, RequestEvent
from cartotheca.monitoring.recording import ua_family
from tests.conftest import basic
from tests.factories import PASSWORD, make_resource, make_user
from tests.monitoring.test_collector import requests_counted
from tests.support.monitoring import collect


def test_user_agent_families():
    assert ua_family("Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0") == "Firefox"
    assert ua_family("Mozilla/5.0 (Windows NT 10.0) AppleWebKit/537.36 (KHTML, like Gecko) "
                     "Chrome/126.0 Safari/537.36 Edg/126.0") == "Edge"
    assert ua_family("QGIS/33400/Ubuntu") == "QGIS"
    assert ua_family("python-requests/2.32.3") == "python-requests"
    assert ua_family(None) == ua_family("") == "Other"


def test_resources_by_id_and_users_by_tracking_id(monitored, db, settings):  # noqa: F811
    app, client = monitored
    dora = make_user(db, "dora")
    document = make_resource(db, settings, dora, "Annual report", resource_type="document")
    client.get(f"/api/v2/resources/{document.id}", headers=basic("dora", PASSWORD))
    client.get(f"/api/v2/documents/{document.id}", headers=basic("dora", PASSWORD))
    client.get(f"/api/v2/resources/{document.id + 1000}")  # no such resource: nothing concerned
    client.get("/ows?service=WMS&request=GetMap&layers=nowhere", headers={"User-Agent": "QGIS/3"})
    assert app.state.monitoring.collector.flush() == 4
    events = list(db.scalars(select(RequestEvent).order_by(RequestEvent.id)))
    assert events[0].resources == [{"type": "document", "name": "Annual report", "resource_id": document.id}]
    assert events[0].resources == events[1].resources
    assert events[2].resources == []
    # Layers are recorded by name whether or not they exist.
    assert events[3].resources == [{"type": "layer", "name": "geonode:nowhere", "resource_id": None}]
    assert (events[0].user_username, events[3].user_username) == ("dora", "AnonymousUser")
    # One stable, opaque id per account; anonymous visitors by address and agent.
    assert events[0].user_identifier == events[1].user_identifier
    assert events[0].user_identifier != events[3].user_identifier
    assert "dora" not in events[0].user_identifier and len(events[0].user_identifier) == 64
    assert (events[0].event_type, events[3].event_type) == ("view", "OWS:WMS")
    assert events[0].response_time > 0 and events[0].response_size > 0


def test_a_request_with_nul_in_its_parameters_costs_no_other_record(monitored, db):  # noqa: F811
    """PostgreSQL stores no NUL (nor lone surrogates); such values are cleaned before the write,
    and a row the database still refuses is dropped alone, not with its whole batch."""
    app, client = monitored
    for n in range(19):
        client.get(f"/ows?service=WMS&request=GetMap&layers=geonode:layer{n}")
    client.get("/ows?service=WMS&request=GetMap&layers=geonode:a%00b&styles=x%00")
    client.get("/api/v2/resources%00x")
    assert app.state.monitoring.collector.flush() == 21
    events = list(db.scalars(select(RequestEvent).order_by(RequestEvent.id)))
    assert len(events) == 21
    assert events[19].resources == [{"type": "layer", "name": "geonode:ab", "resource_id": None}]
    assert "\x00" not in events[20].request_path
    collect(app)
    assert requests_counted(db) == 21
    layers = set(db.scalars(select(MonitoredResource.name).join(
        MetricValue, MetricValue.resource_id == MonitoredResource.id).where(
        MonitoredResource.type == "layer")))
    assert layers == {f"geonode:layer{n}" for n in range(19)} | {"geonode:ab"}


def test_a_row_the_database_refuses_is_dropped_alone(monitored, db, backend):  # noqa: F811
    """A client address longer than its column: PostgreSQL refuses that row (SQLite, which
    does not check lengths, keeps it); the requests captured with it are written all the same."""
    app, client = monitored
    for n in range(5):
        client.get(f"/api/v2/resources?page={n + 1}")
    buffer = app.state.monitoring.buffer
    captured = buffer.drain()
    assert len(captured) == 5
    odd = dataclasses.replace(captured[2], client="x" * 100)
    for item in [*captured[:2], odd, *captured[2:]]:
        buffer.append(item)
    written = app.state.monitoring.collector.flush()
    kept = 5 if backend == "postgresql" else 6
    assert written == kept
    assert db.scalar(select(func.count()).select_from(RequestEvent)) == kept
    paths = sorted(db.scalars(select(RequestEvent.request_path)))
    pages = [f"/api/v2/resources?page={n + 1}" for n in range(5)]
    assert paths == sorted(pages + (pages[2:3] if backend == "sqlite" else []))
