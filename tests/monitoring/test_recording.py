"""Captured requests written as request events: resources named, users tracked anonymously."""

from __future__ import annotations

from sqlalchemy import select

from cartotheca.db.models import RequestEvent
from cartotheca.monitoring.recording import ua_family
from tests.conftest import basic
from tests.factories import PASSWORD, make_resource, make_user
from tests.monitoring.support import monitored  # noqa: F401  (fixture)


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
