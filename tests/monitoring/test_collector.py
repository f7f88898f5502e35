"""The collection cycle: once per period across processes, host metrics, the background thread,
scale-out with a Celery beat, and expiry."""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Iterator

import psutil
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from cartotheca.db.base import utcnow
from cartotheca.db.models import (
    CollectionClaim,
    ExceptionEvent,
    MetricLabel,
    MetricValue,
    MonitoredResource,
    MonitoredService,
    MonitoringMetric,
    RequestEvent,
)
from cartotheca.db.session import make_engine, make_sessionmaker
from cartotheca.monitoring.collector import COLLECTOR_NAME, Collector
from cartotheca.monitoring.periods import align_end, align_start
from tests.support.monitoring import collect
from tests.support.services import empty_redis_database


@pytest.fixture
def beat_broker(worker_id_number) -> Iterator[str]:
    """A Redis database of its own (7 down to 5; the execution tests use 1 + worker number and
    the management tests 8-15), so workers of other suites sharing the Redis never take the
    beat's tasks."""
    with empty_redis_database(7 - (worker_id_number - 1) % 3) as (url, _client):
        yield url


def values(db, metric: str, service_type: str | None = None, label: str | None = None,
           event_type: str = "all") -> list[MetricValue]:
    stmt = (select(MetricValue).join(MonitoringMetric, MonitoringMetric.id == MetricValue.metric_id)
            .join(MonitoredService, MonitoredService.id == MetricValue.service_id)
            .where(MonitoringMetric.name == metric, MetricValue.event_type == event_type))
    if service_type:
        stmt = stmt.where(MonitoredService.service_type == service_type)
    if label is not None:
        stmt = stmt.join(MetricLabel, MetricLabel.id == MetricValue.label_id).where(MetricLabel.name == label)
    return list(db.scalars(stmt))


def requests_counted(db) -> float:
    """request.count over every period and service, for the "no resource" rows."""
    return db.scalar(select(func.coalesce(func.sum(MetricValue.value_num), 0))
                     .join(MonitoringMetric, MonitoringMetric.id == MetricValue.metric_id)
                     .join(MonitoredResource, MonitoredResource.id == MetricValue.resource_id)
                     .where(MonitoringMetric.name == "request.count", MetricValue.event_type == "all",
                            MonitoredResource.type == ""))


def test_each_period_is_collected_once_across_processes(monitored, db):  # noqa: F811
    app, client = monitored
    for _ in range(6):
        client.get("/api/v2/resources")
    app.state.monitoring.collector.flush()
    settings = app.state.cartotheca.settings
    # Two "processes": own engines, own collectors, started together on the same periods.
    engines = [make_engine(settings) for _ in range(2)]
    collectors = [Collector(settings, make_sessionmaker(e)) for e in engines]
    until = align_end(utcnow(), settings.MONITORING_COLLECTION_INTERVAL)
    barrier, reports = threading.Barrier(2), []

    def run(collector):
        barrier.wait()
        reports.append(collector.collect(until=until))

    threads = [threading.Thread(target=run, args=(c,)) for c in collectors]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    for e in engines:
        e.dispose()
    assert requests_counted(db) == 6
    periods = [p for r in reports for p in r.periods]
    assert len(periods) == len(set(periods)) >= 1  # each period went to one of them
    claims = db.execute(select(CollectionClaim.service_id, CollectionClaim.valid_from)).all()
    assert len(claims) == len(set(claims))
    # A later cycle finds nothing new to do.
    assert collect(app).periods == [] and requests_counted(db) == 6


def test_host_metrics_come_from_psutil(monitored, db, admin_auth):  # noqa: F811
    app, client = monitored
    services = list(db.scalars(select(MonitoredService.name)
                               .where(MonitoredService.service_type == "hostcore")))
    interval = app.state.cartotheca.settings.MONITORING_COLLECTION_INTERVAL
    now = utcnow()
    first = collect(app, now=now)
    assert first.host_values > 0
    (total,) = values(db, "mem.all", "hostcore")
    assert total.value_num == psutil.virtual_memory().total
    assert total.valid_from == align_start(now, interval)
    mounts = {v.label_id for v in values(db, "storage.total", "hostcore")}
    assert mounts and values(db, "storage.total", "hostcore", label="/")
    uptime = values(db, "uptime", "hostcore")[0].value_num
    assert abs(uptime - (time.time() - psutil.boot_time())) < 120
    # Rates compare with the previous reading, once at least a second old.
    time.sleep(1.1)
    assert collect(app, now=now + dt.timedelta(seconds=interval)).host_values > 0
    rates = values(db, "cpu.usage.rate", "hostcore")
    assert rates and all(0 <= r.value_num <= psutil.cpu_count() + 0.5 for r in rates)
    interfaces = {iface for iface in psutil.net_io_counters(pernic=True)}
    labels = {db.get(MetricLabel, v.label_id).name for v in values(db, "network.in.rate", "hostcore")}
    assert labels and labels <= interfaces
    # One sample per period and host, however many cycles run in it.
    assert collect(app, now=now + dt.timedelta(seconds=interval)).host_values == 0
    # Read back through the API: the disk rows are labelled by mount point.
    body = client.get("/monitoring/api/metric_data/storage.total/", headers=admin_auth, params={
        "valid_from": now.isoformat(), "valid_to": (now + dt.timedelta(seconds=interval)).isoformat(),
        "service": services[0]}).json()["data"]
    assert body["axis_label"] == "B" and body["type"] == "value"
    rows = [r for p in body["data"] for r in p["data"]]
    assert "/" in {r["label"] for r in rows}


def test_the_background_thread_writes_and_collects(make_app, db):
    app = make_app(MONITORING_COLLECTION_INTERVAL=1, MONITORING_FLUSH_INTERVAL=0.1)
    with TestClient(app) as client:
        for _ in range(3):
            client.get("/api/v2/resources")
        deadline = time.monotonic() + 30
        while requests_counted(db) < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
            db.rollback()
    assert requests_counted(db) == 3
    assert db.scalar(select(func.count()).select_from(CollectionClaim)) >= 1


def test_scale_out_a_celery_beat_collects_for_every_server(make_app, db, spawn, beat_broker):  # noqa: F811
    broker_url = beat_broker
    fast = {"CARTOTHECA_MONITORING_COLLECTION_INTERVAL": "1", "CARTOTHECA_MONITORING_FLUSH_INTERVAL": "0.2"}
    worker = spawn(["worker", "--beat", "--concurrency", "1", "--loglevel", "warning"],
                   CARTOTHECA_TASK_BACKEND="celery", CARTOTHECA_CELERY_BROKER_URL=broker_url, **fast)
    worker.start()
    app = make_app(TASK_BACKEND="celery", CELERY_BROKER_URL=broker_url, MONITORING_COLLECTION_INTERVAL=1,
                   MONITORING_FLUSH_INTERVAL=0.2)
    with TestClient(app) as client:
        for _ in range(4):
            client.get("/api/v2/resources")
        deadline = time.monotonic() + 60
        while requests_counted(db) < 4 and time.monotonic() < deadline:
            time.sleep(0.3)
            db.rollback()
    assert requests_counted(db) == 4, worker.log()[-3000:]
    # The server only wrote its requests; the periods were collected by the worker's beat task.
    core = db.scalar(select(MonitoredService.id).where(MonitoredService.service_type == "core"))
    collectors = set(db.scalars(select(CollectionClaim.collector).where(CollectionClaim.service_id == core)))
    assert collectors and COLLECTOR_NAME not in collectors


def test_old_data_expires(monitored, db):  # noqa: F811
    app, client = monitored
    client.get("/api/v2/resources")
    collect(app)
    assert db.scalar(select(func.count()).select_from(MetricValue)) > 0
    settings = app.state.cartotheca.settings
    # A day on: raw request events go; metric values stay.
    Collector(settings, app.state.cartotheca.sessions).collect(
        until=utcnow(), now=utcnow() + dt.timedelta(days=settings.MONITORING_REQUESTS_TTL, hours=1))
    assert db.scalar(select(func.count()).select_from(RequestEvent)) == 0
    assert db.scalar(select(func.count()).select_from(MetricValue)) > 0
    # Past the data lifetime everything goes.
    Collector(settings, app.state.cartotheca.sessions).collect(
        until=utcnow(), now=utcnow() + dt.timedelta(days=settings.MONITORING_DATA_TTL + 1))
    assert db.scalar(select(func.count()).select_from(MetricValue)) == 0
    assert db.scalar(select(func.count()).select_from(ExceptionEvent)) == 0


@pytest.mark.parametrize("ttl", [1])
def test_requests_with_errors_outlive_the_raw_request_lifetime(make_app, db, ttl):
    app = make_app(MONITORING_FLUSH_INTERVAL=3600, MONITORING_REQUESTS_TTL=ttl)

    def broken():
        raise KeyError("missing")

    app.add_api_route("/api/v2/broken", broken, methods=["GET"])
    with TestClient(app, raise_server_exceptions=False) as client:
        client.get("/api/v2/broken")
        client.get("/api/v2/resources")
        collect(app)
        settings = app.state.cartotheca.settings
        Collector(settings, app.state.cartotheca.sessions).collect(
            until=utcnow(), now=utcnow() + dt.timedelta(days=ttl, hours=1))
    assert db.scalar(select(func.count()).select_from(RequestEvent)) == 1
    assert db.scalar(select(func.count()).select_from(ExceptionEvent)) == 1
