"""cartotheca.monitoring.recording: buffered requests → request events and captured exceptions."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import logging
import re
from dataclasses import replace

from sqlalchemy import insert, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from cartotheca import xmlsafe
from cartotheca.db.models import ExceptionEvent, RequestEvent, Resource
from cartotheca.monitoring import definitions as d
from cartotheca.monitoring.capture import CapturedRequest
from cartotheca.monitoring.classify import Classification, classify
from cartotheca.monitoring.configuration import ServiceSet
from cartotheca.settings import Settings

MAX_PATH = 2048
BATCH = 1000  # request events per INSERT
BROWSERS = (("Edg/", "Edge"), ("OPR/", "Opera"), ("Chrome/", "Chrome"), ("Firefox/", "Firefox"),
            ("Version/", "Safari"))
PRODUCT = re.compile(r"^\s*([A-Za-z][\w.+-]*)")
log = logging.getLogger("cartotheca.monitoring")


class Recorder:
    def __init__(self, settings: Settings):
        self.workspace = settings.DEFAULT_WORKSPACE
        # Tracking ids are keyed hashes: stable per user, not reversible to an IP or account.
        self._key = settings.secret_key.encode()

    def record(self, session: Session, services: ServiceSet, captured: list[CapturedRequest]) -> int:
        """Add the requests (and their server errors) to ``session``; returns how many.

        Values PostgreSQL cannot store (NUL, lone surrogates) or XML could not carry are
        cleaned first. A batch the database still refuses is written again row by row, each in
        its own savepoint, so only the refused row is lost (and logged), never its batch."""
        # A client that went away before any response left nothing worth counting.
        captured = [c for c in captured if c.status or c.error]
        classified = [self._classify(c) for c in captured]
        names = self._resource_names(session, classified)
        rows = [xmlsafe.clean_all(self._event(c, k, services, names))
                for c, k in zip(captured, classified, strict=True)]
        plain = [row for row, c in zip(rows, captured, strict=True) if not c.error]
        written = 0
        for start in range(0, len(plain), BATCH):
            written += _insert_batch(session, plain[start:start + BATCH])
        for row, c in zip(rows, captured, strict=True):
            if c.error:  # rare: inserted one by one, for the id the exception refers to
                written += _insert_with_exception(session, row, c.error)
        session.flush()
        return written

    def _classify(self, c: CapturedRequest) -> Classification:
        found = classify(c.method, c.path, c.query.decode("latin-1"), c.body_prefix, self.workspace)
        # Names come percent-decoded from the request: cleaned before they are looked up.
        return replace(found, layers=xmlsafe.clean_all(found.layers), url=xmlsafe.clean_all(found.url))

    def _resource_names(self, session: Session, classified: list[Classification]) -> dict:
        """Monitored (type, name, catalogue id) of every layer alternate and catalogue id named."""
        ids = {i for k in classified for i in k.resource_ids}
        alternates = {a for k in classified for a in k.layers}
        out: dict = {}
        if ids:
            for rid, rtype, alternate, title in session.execute(
                    select(Resource.id, Resource.resource_type, Resource.alternate, Resource.title)
                    .where(Resource.id.in_(ids))):
                mtype = d.CATALOGUE_TYPES.get(rtype, d.RESOURCE_BASE)
                name = alternate if mtype == d.LAYER and alternate else title
                out[("id", rid)] = (mtype, name[:255], rid)
        if alternates:
            known = dict(session.execute(
                select(Resource.alternate, Resource.id).where(Resource.alternate.in_(alternates))).all())
            for alternate in alternates:
                out[("layer", alternate)] = (d.LAYER, alternate[:255], known.get(alternate))
        return out

    def _event(self, c: CapturedRequest, k: Classification, services: ServiceSet,
               names: dict) -> dict:
        headers = _headers(c.headers)
        response = _headers(c.response_headers or [])
        created = dt.datetime.fromtimestamp(c.started, dt.UTC).replace(tzinfo=None)
        agent = headers.get(b"user-agent", b"").decode("latin-1")[:255] or None
        query = c.query.decode("latin-1")
        size = c.size or int(response.get(b"content-length", b"0") or 0)
        return {
            "created": created, "received": created + dt.timedelta(seconds=c.duration),
            "service_id": services.for_type(k.service_type), "event_type": k.event_type,
            "secondary_event_type": k.secondary_event_type,
            "host": headers.get(b"host", b"").decode("latin-1")[:255],
            "request_path": (c.path + ("?" + query if query else ""))[:MAX_PATH],
            "request_method": c.method[:16], "response_status": c.status, "response_size": size,
            "response_time": round(c.duration * 1000.0, 3),
            "response_type": response.get(b"content-type", b"").decode("latin-1")[:255] or None,
            "user_agent": agent, "user_agent_family": ua_family(agent), "client_ip": c.client,
            "user_identifier": self._tracking_id(c, agent),
            "user_username": c.user[1] if c.user else "AnonymousUser",
            "resources": _resources(k, names),
        }

    def _tracking_id(self, c: CapturedRequest, agent: str | None) -> str:
        # Accounts are followed across clients; anonymous visitors by address and agent.
        subject = f"user:{c.user[0]}" if c.user else f"anonymous:{c.client}|{agent or ''}"
        return hmac.new(self._key, subject.encode(), hashlib.sha256).hexdigest()


def _headers(raw: list[tuple[bytes, bytes]]) -> dict[bytes, bytes]:
    return {name.lower(): value for name, value in raw}


def _resources(k: Classification, names: dict) -> list[dict]:
    found = [names.get(("layer", a)) for a in k.layers] + [names.get(("id", i)) for i in k.resource_ids]
    out = [{"type": t, "name": n, "resource_id": r} for t, n, r in dict.fromkeys(f for f in found if f)]
    if k.url:
        out.append({"type": d.URL, "name": k.url[:255], "resource_id": None})
    return out


def ua_family(agent: str | None) -> str:
    """The browser or client product of a user agent (``Firefox``, ``QGIS``, ``curl`` ...)."""
    if not agent:
        return "Other"
    for marker, family in BROWSERS:
        if marker in agent:
            return family
    match = PRODUCT.match(agent)
    return match[1][:64] if match else "Other"


def _insert_batch(session: Session, rows: list[dict]) -> int:
    try:
        with session.begin_nested():
            session.execute(insert(RequestEvent.__table__), rows)
        return len(rows)
    except SQLAlchemyError:
        log.warning("a batch of %d request events was refused; writing them one by one", len(rows))
    written = 0
    for row in rows:
        try:
            with session.begin_nested():
                session.execute(insert(RequestEvent.__table__), [row])
            written += 1
        except SQLAlchemyError:
            log.warning("request event dropped (%s %s): the database refused it",
                        row["request_method"], row["request_path"][:200], exc_info=True)
    return written


def _insert_with_exception(session: Session, row: dict, error: tuple[str, str, str]) -> int:
    try:
        with session.begin_nested():
            request_id = session.execute(insert(RequestEvent).returning(RequestEvent.id), row).scalar()
            session.add(ExceptionEvent(
                created=row["received"], service_id=row["service_id"],
                error_type=xmlsafe.clean(error[0])[:255], error_message=xmlsafe.clean(error[1]),
                error_data=xmlsafe.clean(error[2]), request_id=request_id))
            session.flush()
        return 1
    except SQLAlchemyError:
        log.warning("request event with a server error dropped (%s %s): the database refused it",
                    row["request_method"], row["request_path"][:200], exc_info=True)
        return 0
