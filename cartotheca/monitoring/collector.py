"""cartotheca.monitoring.collector: the collection cycle and the thread that runs it.

A cycle writes the buffered requests, samples this host, aggregates every finished period of
the request services into metric values, evaluates the notification checks (e-mailing their
receivers) and drops data past its lifetime.

A period is aggregated once across all processes: its claim row (unique per service and
period) is inserted first in the transaction that writes its values, so a second process, or
a Celery beat, blocks on it and then skips. Periods are taken only once they have been over
for two flush intervals, so every process's buffer has reached the database by then; a
request written later still than that is kept as an event but not counted.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy import Engine, delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from cartotheca.db.base import utcnow
from cartotheca.db.models import (
    CollectionClaim,
    ExceptionEvent,
    MetricValue,
    MonitoredService,
    RequestEvent,
)
from cartotheca.db.session import make_sessionmaker
from cartotheca.monitoring import alerts, store
from cartotheca.monitoring.aggregation import aggregate_period
from cartotheca.monitoring.capture import RequestBuffer
from cartotheca.monitoring.configuration import ServiceSet, ensure_configured
from cartotheca.monitoring.hosts import HostSampler
from cartotheca.monitoring.periods import align_start
from cartotheca.monitoring.recording import Recorder
from cartotheca.settings import Settings

log = logging.getLogger("cartotheca.monitoring")
COLLECTOR_NAME = f"{socket.gethostname()}:{os.getpid()}"
MAX_CATCH_UP = dt.timedelta(days=1)  # after a long stop, older periods are not aggregated
CLEAN_EVERY = 600.0  # seconds between two removals of expired data

SessionFactory = Callable[[], Session]


@dataclass
class CycleReport:
    recorded: int = 0  # request events written
    host_values: int = 0  # host metric values written
    periods: list[tuple[int, dt.datetime, dt.datetime]] = field(default_factory=list)
    alerts: list[alerts.CheckResult] = field(default_factory=list)
    mailed: list[int] = field(default_factory=list)  # ids of checks whose receivers got mail


class Collector:
    def __init__(self, settings: Settings, sessions: SessionFactory, *,
                 buffer: RequestBuffer | None = None, sample_host: bool = False):
        self.settings, self.sessions, self.buffer = settings, sessions, buffer
        self.recorder = Recorder(settings)
        self.sample_host = sample_host
        self.sampler: HostSampler | None = None
        # One cycle or flush at a time per process: a flush in the thread must finish before
        # a cycle started elsewhere (a test, the CLI) aggregates what it wrote.
        self.lock = threading.Lock()
        self._last_clean: float | None = None

    @property
    def settle(self) -> dt.timedelta:
        return dt.timedelta(seconds=2 * self.settings.MONITORING_FLUSH_INTERVAL + 2)

    def flush(self) -> int:
        with self.lock:
            return self._flush()

    def collect(self, *, until: dt.datetime | None = None, now: dt.datetime | None = None,
                aggregate: bool = True) -> CycleReport:
        """One cycle. ``until``: aggregate the periods that end by then (default: those over
        for long enough that every process has written its requests)."""
        with self.lock:
            now = now or utcnow()
            report = CycleReport(recorded=self._flush())
            with self.sessions() as session:
                services = ensure_configured(session, self.settings)
                session.commit()
            if self.sample_host:
                report.host_values = self._sample_host(services, now)
            if aggregate:
                report.periods = self._aggregate(services, until or now - self.settle)
                report.alerts, report.mailed = alerts.run(self.sessions, self.settings, now)
                self._clean(now)
            return report

    # -- writing requests ------------------------------------------------------------------

    def _flush(self) -> int:
        items = self.buffer.drain() if self.buffer is not None else []
        if not items:
            return 0
        try:
            with self.sessions() as session:
                services = ensure_configured(session, self.settings)
                written = self.recorder.record(session, services, items)
                session.commit()
                return written
        except Exception:
            # Not put back: a batch the database refuses would be refused again forever.
            log.warning("%d captured requests could not be written", len(items), exc_info=True)
            return 0

    # -- host ------------------------------------------------------------------------------

    def _sample_host(self, services: ServiceSet, now: dt.datetime) -> int:
        if self.sampler is None:
            self.sampler = HostSampler()
        values = self.sampler.sample()
        start = align_start(now, services.interval)
        end = start + dt.timedelta(seconds=services.interval)
        with self.sessions() as session:
            if not claim(session, services.hostcore, start, end):
                return 0
            metrics = store.metric_ids(session)
            labels = store.label_ids(session, {label: None for _, label, _ in values})
            empty = store.resource_ids(session, {store.EMPTY_RESOURCE: None})[store.EMPTY_RESOURCE]
            session.add_all(MetricValue(
                valid_from=start, valid_to=end, service_id=services.hostcore, metric_id=metrics[name],
                event_type="all", resource_id=empty, label_id=labels[label[:255]],
                value=f"{value:.4f}", value_num=value, samples_count=1) for name, label, value in values)
            _advance(session, services.hostcore, now)
            session.commit()
        return len(values)

    # -- request metrics -------------------------------------------------------------------

    def _aggregate(self, services: ServiceSet, until: dt.datetime) -> list:
        done = []
        for service_id in (services.core, services.mapserver):
            done += self._aggregate_service(service_id, until)
        return done

    def _aggregate_service(self, service_id: int, until: dt.datetime) -> list:
        with self.sessions() as session:
            service = session.get(MonitoredService, service_id)
            if service is None:  # removed since the cycle began
                return []
            interval = service.check_interval
            start = service.last_check or session.scalar(
                select(func.min(RequestEvent.received)).where(RequestEvent.service_id == service_id))
        if start is None:
            return []
        step = dt.timedelta(seconds=interval)
        period = max(align_start(start, interval), align_start(until - MAX_CATCH_UP, interval))
        done = []
        while period + step <= until:
            if self._aggregate_one(service_id, period, period + step):
                done.append((service_id, period, period + step))
            period += step
        with self.sessions() as session:
            _advance(session, service_id, period)
            session.commit()
        return done

    def _aggregate_one(self, service_id: int, start: dt.datetime, end: dt.datetime) -> bool:
        with self.sessions() as session:
            pending = session.scalar(select(RequestEvent.id).where(
                RequestEvent.service_id == service_id, RequestEvent.received >= start,
                RequestEvent.received < end).limit(1))
            if pending is None or not claim(session, service_id, start, end):
                return False
            aggregate_period(session, service_id, start, end)
            session.commit()
            return True

    # -- expiry ----------------------------------------------------------------------------

    def _clean(self, now: dt.datetime) -> None:
        if self._last_clean is not None and time.monotonic() - self._last_clean < CLEAN_EVERY:
            return
        self._last_clean = time.monotonic()
        data = now - dt.timedelta(days=self.settings.MONITORING_DATA_TTL)
        raw = now - dt.timedelta(days=self.settings.MONITORING_REQUESTS_TTL)
        with self.sessions() as session:
            session.execute(delete(MetricValue).where(MetricValue.valid_to < data))
            session.execute(delete(RequestEvent).where(RequestEvent.received < data))
            session.execute(delete(RequestEvent).where(
                RequestEvent.received < raw,
                ~RequestEvent.id.in_(select(ExceptionEvent.request_id))))
            session.execute(delete(CollectionClaim).where(
                CollectionClaim.valid_to < raw - MAX_CATCH_UP))
            session.commit()


def claim(session: Session, service_id: int, start: dt.datetime, end: dt.datetime) -> bool:
    """Take a period for this transaction; False (and the transaction rolled back) when another
    process has it. Must be the transaction's first write."""
    try:
        session.add(CollectionClaim(service_id=service_id, valid_from=start, valid_to=end,
                                    collector=COLLECTOR_NAME))
        session.flush()
        return True
    except IntegrityError:
        session.rollback()
        return False


def _advance(session: Session, service_id: int, moment: dt.datetime) -> None:
    """Move a service's last check forward (never back: other processes move it too)."""
    session.execute(update(MonitoredService).where(
        MonitoredService.id == service_id,
        (MonitoredService.last_check.is_(None)) | (MonitoredService.last_check < moment),
    ).values(last_check=moment))


class Monitor:
    """What one server process runs: the capture buffer, its own engine, the collector thread.

    The collector has an engine of its own (one connection, see ``db.session.background_pool``)
    so its writes never wait for, or are counted with, the requests' connections.
    """

    def __init__(self, settings: Settings, engine: Engine):
        self.settings = settings
        self.buffer = RequestBuffer(settings.MONITORING_BUFFER_SIZE)
        self._engine = engine
        self.collector = Collector(settings, make_sessionmaker(engine), buffer=self.buffer,
                                   sample_host=True)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def for_app(cls, settings: Settings, sessions: SessionFactory, engine: Engine) -> Monitor:
        """A monitor for a new app, its services set up (so they are listed from the start);
        ``engine`` is the collector's own, disposed of when the monitor stops."""
        with sessions() as session:
            ensure_configured(session, settings)
            session.commit()
        return cls(settings, engine)

    def collect(self, **kwargs) -> CycleReport:
        return self.collector.collect(**kwargs)

    def start(self, *, aggregate: bool) -> None:
        """Start the thread; ``aggregate`` False in scale-out mode, where a Celery beat task
        runs the cycle once for all processes and this process only writes and samples."""
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, args=(aggregate,), name="monitoring-collector",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
        self.collector.flush()
        self._engine.dispose()

    def _run(self, aggregate: bool) -> None:
        interval = max(1, self.settings.MONITORING_COLLECTION_INTERVAL)
        flush_every = max(0.05, min(self.settings.MONITORING_FLUSH_INTERVAL, interval))
        next_cycle = time.monotonic() + interval
        while not self._stop.wait(flush_every):
            try:
                if time.monotonic() >= next_cycle:
                    next_cycle = time.monotonic() + interval
                    self.collector.collect(aggregate=aggregate)
                else:
                    self.collector.flush()
            except Exception:
                log.warning("monitoring collection failed", exc_info=True)


def collect_once(settings: Settings, sessions: SessionFactory, *, until: dt.datetime | None = None
                 ) -> CycleReport:
    """One aggregation cycle with no buffer of its own (Celery beat task, command line)."""
    return Collector(settings, sessions).collect(until=until)
