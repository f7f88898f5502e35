"""Monitoring under test, for the monitoring and the monitoring API tests: a fresh monitored app
(a fixture registered by ``tests/conftest.py``) and running a collection cycle."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from cartotheca.db.base import utcnow
from cartotheca.monitoring.collector import CycleReport
from cartotheca.monitoring.periods import align_end


@pytest.fixture
def monitored(make_app) -> Iterator[tuple[object, TestClient]]:
    """A fresh app (its own capture buffer) whose background cycle stays out of the way:
    tests run the cycle themselves."""
    app = make_app(MONITORING_COLLECTION_INTERVAL=60, MONITORING_FLUSH_INTERVAL=3600)
    with TestClient(app, raise_server_exceptions=False) as client:
        yield app, client


def collect(app, **kwargs) -> CycleReport:
    """A cycle that aggregates every period up to the end of the current one."""
    interval = app.state.cartotheca.settings.MONITORING_COLLECTION_INTERVAL
    kwargs.setdefault("until", align_end(utcnow(), interval))
    return app.state.monitoring.collect(**kwargs)
