"""cartotheca.catalogue.events: the notification outbox: notices written with the change, sent after commit.

``record`` adds a notice to the caller's session, so it commits or rolls back with the change it
reports: a rolled-back request leaves nothing to send. After the commit a delivery worker (the
in-process ``Dispatcher`` thread, or a Celery task in scale-out) turns each notice into
deliveries, one per channel and target, and sends them; each is retried on its own with
exponential backoff, so a dead webhook never holds up an e-mail or another webhook. The request
that caused a notice never waits for, nor fails with, its delivery.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import threading
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from sqlalchemy import Engine, event, func, or_, select, update
from sqlalchemy.orm import Session

from cartotheca import mail, siteurl
from cartotheca.catalogue.auth import Principal
from cartotheca.catalogue.event_messages import chat_payload, email_message
from cartotheca.db.base import utcnow
from cartotheca.db.models import Delivery, Favorite, GroupMember, Notice, Resource, User
from cartotheca.db.session import make_sessionmaker
from cartotheca.settings import Settings

log = logging.getLogger("cartotheca.events")

DOCUMENT_UPLOADED = "document_uploaded"
DATASET_PUBLISHED = "dataset_published"
METADATA_UPDATED = "metadata_updated"
PERMISSIONS_CHANGED = "permissions_changed"
RESOURCE_DELETED = "resource_deleted"
ACCOUNT_REQUESTED = "account_requested"
ACCOUNT_APPROVED = "account_approved"
RESOURCE_KINDS = frozenset({DOCUMENT_UPLOADED, DATASET_PUBLISHED, METADATA_UPDATED,
                            PERMISSIONS_CHANGED, RESOURCE_DELETED})
KINDS = RESOURCE_KINDS | {ACCOUNT_REQUESTED, ACCOUNT_APPROVED}

PENDING, QUEUED, SENDING, SENT, FAILED = "pending", "queued", "sending", "sent", "failed"
EMAIL, CHAT = "email", "chat"
BATCH = 100
_PENDING_KEY = "cartotheca.events.pending"

SessionFactory = Callable[[], Session]


# ---------------------------------------------------------------------------------------
# recording, in the caller's transaction

def record(session: Session, kind: str, *, resource: Resource | None = None,
           actor: Principal | User | None = None, user: User | None = None,
           notify_user_ids: Iterable[int] = ()) -> Notice:
    """Add a notice of ``kind`` to ``session``; it is sent only if the session commits.

    What the messages show (title, type, actor's name) is copied now: a deleted resource's
    notice is sent after the resource is gone. ``notify_user_ids`` adds recipients that could
    not be found later (the favourites of a resource being deleted).
    """
    if kind not in KINDS:
        raise ValueError(f"unknown notice kind {kind!r}")
    actor_user = actor.user if isinstance(actor, Principal) else actor
    payload: dict = {"actor": actor_user.username if actor_user is not None else None}
    if resource is not None:
        payload["resource"] = {
            "id": resource.id, "uuid": resource.uuid, "title": resource.title,
            "resource_type": resource.resource_type,
            "detail_path": f"/catalogue/#/{resource.resource_type}/{resource.id}",
        }
    if user is not None:
        payload["user"] = {"id": user.id, "username": user.username, "email": user.email}
    extra = sorted(set(notify_user_ids))
    if extra:
        payload["user_ids"] = extra
    # Messages are sent later, without the request: they link to where it was addressed.
    site = siteurl.of_request()
    if site is not None:
        payload["site"] = site
    notice = Notice(kind=kind, payload=payload, created=utcnow(), expanded=False,
                    resource_id=resource.id if resource is not None else None,
                    group_id=resource.group_id if resource is not None else None,
                    owner_id=resource.owner_id if resource is not None else None,
                    actor_id=actor_user.id if actor_user is not None else None,
                    user_id=user.id if user is not None else None)
    session.add(notice)
    session.info[_PENDING_KEY] = True
    return notice


def favourite_user_ids(session: Session, resource_ids: Iterable[int]) -> dict[int, list[int]]:
    """Who favourited each resource, read before a deletion removes the favourites."""
    ids = list(resource_ids)
    fans: dict[int, list[int]] = {}
    if ids:
        for resource_id, user_id in session.execute(select(Favorite.resource_id, Favorite.user_id)
                                                    .where(Favorite.resource_id.in_(ids))):
            fans.setdefault(resource_id, []).append(user_id)
    return fans


# ---------------------------------------------------------------------------------------
# waking the delivery worker after a commit

_wakers: list[Callable[[], None]] = []
_wakers_lock = threading.Lock()


def add_waker(wake: Callable[[], None]) -> None:
    with _wakers_lock:
        _wakers.append(wake)


def remove_waker(wake: Callable[[], None]) -> None:
    with _wakers_lock:
        if wake in _wakers:
            _wakers.remove(wake)


@event.listens_for(Session, "after_commit")
def _after_commit(session: Session) -> None:
    if not session.info.pop(_PENDING_KEY, False):
        return
    with _wakers_lock:
        wakers = list(_wakers)
    for wake in wakers:
        try:
            wake()
        except Exception:  # the commit is done; a worker that cannot be woken polls anyway
            log.warning("could not wake the notification worker", exc_info=True)


@event.listens_for(Session, "after_rollback")
def _after_rollback(session: Session) -> None:
    session.info.pop(_PENDING_KEY, None)


# ---------------------------------------------------------------------------------------
# notices → deliveries

def _email_enabled(settings: Settings) -> bool:
    return any("email" in backend.lower() for backend in settings.PINAX_NOTIFICATIONS_BACKENDS)


def recipients(session: Session, notice: Notice) -> list[str]:
    """E-mail addresses of the active users this notice concerns, one per address."""
    wanted = (User.is_active.is_(True), User.email != "")
    if notice.kind == ACCOUNT_REQUESTED:
        who = or_(User.is_staff.is_(True), User.is_superuser.is_(True))
    elif notice.kind == ACCOUNT_APPROVED:
        who = User.id == notice.user_id
    else:
        ids = {notice.owner_id, *notice.payload.get("user_ids", [])} - {None}
        who = or_(User.id.in_(ids),
                  User.id.in_(select(GroupMember.user_id).where(
                      GroupMember.group_id == notice.group_id, GroupMember.role == "manager")),
                  User.id.in_(select(Favorite.user_id).where(
                      Favorite.resource_id == notice.resource_id)))
    seen: dict[str, str] = {}
    for address in session.scalars(select(User.email).where(who, *wanted).order_by(User.id)):
        seen.setdefault(address.lower(), address)
    return list(seen.values())


def _targets(session: Session, settings: Settings, notice: Notice) -> list[tuple[str, str, str]]:
    out = []
    if _email_enabled(settings):
        status = QUEUED if settings.PINAX_NOTIFICATIONS_QUEUE_ALL else PENDING
        out += [(EMAIL, address, status) for address in recipients(session, notice)]
    if settings.CHAT_ENABLED and notice.kind in RESOURCE_KINDS:
        out += [(CHAT, url, PENDING) for url in dict.fromkeys(settings.CHAT_WEBHOOK_URLS)]
    return out


def expand_notices(sessions: SessionFactory, settings: Settings) -> int:
    """Turn new notices into deliveries; each notice is taken by one process only."""
    with sessions() as session:
        ids = list(session.scalars(select(Notice.id).where(Notice.expanded.is_(False))
                                   .order_by(Notice.id).limit(BATCH)))
    done = 0
    for notice_id in ids:
        with sessions() as session:
            taken = session.execute(update(Notice).where(
                Notice.id == notice_id, Notice.expanded.is_(False)).values(expanded=True))
            if taken.rowcount != 1:
                session.rollback()
                continue
            notice = session.get(Notice, notice_id)
            now = utcnow()
            session.add_all(Delivery(notice_id=notice_id, channel=channel, target=target,
                                     status=status, attempts=0, next_attempt=now, created=now)
                            for channel, target, status in _targets(session, settings, notice))
            session.commit()
            done += 1
    return done


# ---------------------------------------------------------------------------------------
# sending

def _lease(settings: Settings) -> dt.timedelta:
    """How long a claim holds: past it, a process that died mid-send is taken over."""
    return dt.timedelta(seconds=3 * settings.TIMEOUT + 30)


def _claim(session: Session, settings: Settings, delivery_id: int, waiting: str,
           now: dt.datetime) -> bool:
    result = session.execute(update(Delivery).where(
        Delivery.id == delivery_id,
        Delivery.attempts < settings.NOTIFICATIONS_MAX_ATTEMPTS,
        or_((Delivery.status == waiting) & (Delivery.next_attempt <= now),
            (Delivery.status == SENDING) & (Delivery.claimed_until < now)),
    ).values(status=SENDING, attempts=Delivery.attempts + 1, claimed_until=now + _lease(settings)))
    return result.rowcount == 1


def send_one(settings: Settings, delivery: Delivery, notice: Notice) -> None:
    """Deliver over the channel; raises on any failure (the caller schedules the retry)."""
    if delivery.channel == EMAIL:
        subject, body = email_message(settings, notice)
        mail.send(settings, subject, body, [delivery.target])
    elif delivery.channel == CHAT:
        post_json(delivery.target, chat_payload(settings, notice), settings.TIMEOUT)
    else:
        raise ValueError(f"unknown channel {delivery.channel!r}")


def post_json(url: str, body: dict, timeout: float) -> None:
    """POST to a webhook the operator configured (CHAT_WEBHOOK_URLS), so no host allow-list
    applies; any answer outside 2xx raises."""
    if urlsplit(url).scheme not in ("http", "https"):
        raise ValueError(f"not an http(s) URL: {url}")
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST", headers={
        "Content-Type": "application/json", "User-Agent": "Cartotheca"})
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
        response.read()


def attempt(session: Session, settings: Settings, delivery_id: int, waiting: str = PENDING) -> bool | None:
    """Claim, send and settle one delivery; None when another process has it or it is not due."""
    now = utcnow()
    if not _claim(session, settings, delivery_id, waiting, now):
        session.rollback()
        return None
    session.commit()
    delivery = session.get(Delivery, delivery_id)
    notice = session.get(Notice, delivery.notice_id)
    # No transaction open while the mail server or a webhook answers (up to TIMEOUT seconds).
    session.commit()
    error = None
    try:
        send_one(settings, delivery, notice)
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"[:2000]
        log.info("delivery %s of notice %s failed: %s", delivery_id, notice.id, error)
    _settle(session, settings, delivery, error, waiting)
    session.commit()
    return error is None


def _settle(session: Session, settings: Settings, delivery: Delivery, error: str | None,
            waiting: str) -> None:
    now = utcnow()
    if error is None:
        values = {"status": SENT, "sent_at": now, "last_error": None}
    elif delivery.attempts >= settings.NOTIFICATIONS_MAX_ATTEMPTS:
        values = {"status": FAILED, "last_error": error}
    else:
        delay = settings.NOTIFICATIONS_RETRY_BASE_SECONDS * 2 ** (delivery.attempts - 1)
        values = {"status": waiting, "last_error": error,
                  "next_attempt": now + dt.timedelta(seconds=delay)}
    # Only while the claim is still this process's (same attempt, still sending).
    session.execute(update(Delivery).where(
        Delivery.id == delivery.id, Delivery.status == SENDING,
        Delivery.attempts == delivery.attempts).values(claimed_until=None, **values))


@dataclass
class DeliveryReport:
    expanded: int = 0
    sent: int = 0
    failed: int = 0
    next_due: dt.datetime | None = None


def deliver_due(sessions: SessionFactory, settings: Settings) -> DeliveryReport:
    """One pass of the delivery worker: expand new notices, send what is due."""
    report = DeliveryReport(expanded=expand_notices(sessions, settings))
    now = utcnow()
    with sessions() as session:
        ids = list(session.scalars(select(Delivery.id).where(or_(
            (Delivery.status == PENDING) & (Delivery.next_attempt <= now),
            (Delivery.status == SENDING) & (Delivery.claimed_until < now),
        )).order_by(Delivery.id).limit(BATCH)))
    for delivery_id in ids:
        with sessions() as session:
            outcome = attempt(session, settings, delivery_id)
        if outcome is True:
            report.sent += 1
        elif outcome is False:
            report.failed += 1
    _give_up_stale(sessions, settings, now)
    with sessions() as session:
        report.next_due = session.scalar(select(func.min(Delivery.next_attempt)).where(
            Delivery.status == PENDING))
    return report


def _give_up_stale(sessions: SessionFactory, settings: Settings, now: dt.datetime) -> None:
    """A claim that ran out on its last attempt (its process died) will not be retried."""
    with sessions() as session:
        session.execute(update(Delivery).where(
            Delivery.status == SENDING, Delivery.claimed_until < now,
            Delivery.attempts >= settings.NOTIFICATIONS_MAX_ATTEMPTS,
        ).values(status=FAILED, claimed_until=None, last_error="abandoned after the last attempt"))
        session.commit()


def send_queued(session: Session, settings: Settings) -> int:
    """The ``send_notifications`` command: send the e-mails PINAX_NOTIFICATIONS_QUEUE_ALL kept.

    New notices are expanded first, in their own transactions. A failed e-mail stays queued
    for the next run until its attempts are used up. Returns how many were sent.
    """
    session.commit()
    bind = session.get_bind()
    expand_notices(lambda: Session(bind=bind, expire_on_commit=False, autoflush=False), settings)
    ids = list(session.scalars(select(Delivery.id).where(
        Delivery.channel == EMAIL, Delivery.status == QUEUED).order_by(Delivery.id)))
    session.commit()
    return sum(1 for delivery_id in ids if attempt(session, settings, delivery_id, QUEUED))


# ---------------------------------------------------------------------------------------
# the in-process worker

class Dispatcher:
    """The delivery thread of one server process, woken after each commit that wrote notices
    and otherwise polling for due retries. It has an engine of its own (one connection), so its statements
    never wait for, or are counted with, the requests'."""

    def __init__(self, settings: Settings, engine: Engine):
        self.settings = settings
        self._engine = engine  # its own (one connection), disposed of when the thread stops
        self.session = make_sessionmaker(engine)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def wake(self) -> None:
        self._wake.set()

    def start(self) -> None:
        self._stop.clear()
        add_waker(self.wake)
        self._thread = threading.Thread(target=self._run, name="notification-delivery", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        remove_waker(self.wake)
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=3 * self.settings.TIMEOUT)
            self._thread = None
        self._engine.dispose()

    def _run(self) -> None:
        poll = max(0.01, self.settings.NOTIFICATIONS_POLL_SECONDS)
        wait = poll
        while True:
            self._wake.wait(wait)
            if self._stop.is_set():
                return
            self._wake.clear()
            wait = poll
            try:
                report = deliver_due(self.session, self.settings)
            except Exception:
                log.warning("notification delivery pass failed", exc_info=True)
                continue
            if report.next_due is not None:
                until = (report.next_due - utcnow()).total_seconds()
                wait = min(poll, max(0.01, until))
