"""cartotheca.catalogue.login_guard: bounds what failed logins may cost.

Every way a password is checked (HTTP Basic on the API and OWS, the OAuth password grant, the
login endpoint and form) goes through ``verify``:

* Failed logins are counted per lockout key, as django-axes does in GeoNode: by client address,
  by account name, or by both together (AXES_LOCKOUT_PARAMETERS). Once a key reaches
  AXES_FAILURE_LIMIT, every login under it is refused with 429 (even the right password) until
  AXES_COOLOFF_TIME hours after its last failure. The counts are in the database so that every
  server process agrees: one statement checks, one records.
* Password hashes are memory-hard (Argon2id, PASSWORD_HASH_MEMORY_KIB each), so at most
  PASSWORD_CHECK_CONCURRENCY checks run at once per process; a request that cannot get a slot
  within PASSWORD_CHECK_WAIT_SECONDS, or finds PASSWORD_CHECK_QUEUE requests already waiting,
  gets 503 with Retry-After instead of queueing without bound. Unknown accounts cost a dummy
  check under the same limit (no timing oracle).

Why a flood of wrong passwords does not starve right ones: the lockout is checked before a slot
is taken, and checked again after waiting for one, so a flooding address is cut off with a cheap
429 after AXES_FAILURE_LIMIT hashes instead of holding the slots; the few waiters hold no pooled
connection, and the rest get 503 at once, so the flood holds neither the database pool nor the
server's threads; and Basic credentials verified
recently are remembered (``auth.CREDENTIALS``, keyed by an HMAC of the password and the stored
hash), so clients that send them on every request need no slot at all. What remains exposed is a
first login (or one after the cache expired) during a flood spread over many addresses: it may
wait for a slot, then get 503 and retry; memory stays bounded either way.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache

from sqlalchemy import case, delete, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from cartotheca.db.base import utcnow
from cartotheca.db.models import LoginFailure
from cartotheca.errors import Busy, TooManyAttempts
from cartotheca.settings import Settings

# Rows whose cool-off ended are removed now and then, by one in this many recorded failures, so
# a spray of made-up account names does not grow the table for ever.
PURGE_EVERY = 64
_purge_counter = 0


def lockout_keys(settings: Settings, username: str | None, address: str | None, *,
                 purpose: str = "login") -> list[str]:
    """The digests this attempt is counted under, one per lockout parameter (or combination).
    Another ``purpose`` (password reset requests) is counted apart: using it up does not lock
    an address or account out of logging in."""
    if not settings.AXES_ENABLED:
        return []
    values = {"username": (username or "").lower(), "ip_address": address or ""}
    prefix = "" if purpose == "login" else f"purpose={purpose}\x1f"
    keys = []
    for item in settings.AXES_LOCKOUT_PARAMETERS:
        names = [item] if isinstance(item, str) else list(item)
        text = prefix + "\x1f".join(f"{name}={values[name]}" for name in names)
        keys.append(hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest())
    return keys


def _cooloff(settings: Settings) -> dt.timedelta:
    return dt.timedelta(hours=settings.AXES_COOLOFF_TIME)


def locked_since(settings: Settings, keys: list[str]):
    """A scalar subquery: the last failure of the first of ``keys`` still locked out, or NULL.
    Callers that read the account anyway put it in that statement, so a login costs no
    statement of its own; ``None`` when there is nothing to check."""
    if not keys:
        return None
    return (
        select(func.max(LoginFailure.last_failure)).where(
            LoginFailure.key.in_(keys),
            LoginFailure.failures >= settings.AXES_FAILURE_LIMIT,
            LoginFailure.last_failure > utcnow() - _cooloff(settings),
        ).scalar_subquery()
    )


def raise_if_locked(settings: Settings, last_failure: dt.datetime | None) -> None:
    """Raise TooManyAttempts, with the seconds left, for a lockout whose last failure was
    ``last_failure`` (the value of ``locked_since``)."""
    if last_failure is not None:
        remaining = (last_failure + _cooloff(settings) - utcnow()).total_seconds()
        raise TooManyAttempts(max(1, math.ceil(remaining)))


def refuse_if_locked(session: Session, settings: Settings, keys: list[str]) -> None:
    """Raise TooManyAttempts while any of ``keys`` is locked out (one indexed statement)."""
    locked = locked_since(settings, keys)
    if locked is not None:
        raise_if_locked(settings, session.scalar(select(locked)))


def record_failure(session: Session, settings: Settings, keys: list[str]) -> None:
    """Count a failed login under ``keys`` and commit it (one upsert statement): the request
    itself fails, but the count must stay."""
    global _purge_counter
    if not keys:
        return
    now = utcnow()
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    # rows in one order in every statement: concurrent upserts cannot deadlock on PostgreSQL
    statement = insert(LoginFailure).values([
        {"key": key, "failures": 1, "last_failure": now} for key in sorted(set(keys))])
    table = LoginFailure.__table__
    fresh = table.c.last_failure > now - _cooloff(settings)
    session.execute(statement.on_conflict_do_update(
        index_elements=[table.c.key],
        set_={"failures": case((fresh, table.c.failures + 1), else_=1), "last_failure": now},
    ))
    _purge_counter += 1
    if _purge_counter % PURGE_EVERY == 0:
        session.execute(delete(LoginFailure).where(LoginFailure.last_failure <= now - _cooloff(settings)))
    session.commit()


@cache
def _slots(size: int) -> threading.BoundedSemaphore:
    return threading.BoundedSemaphore(size)


@cache
def _waiting_places(size: int) -> threading.BoundedSemaphore:
    return threading.BoundedSemaphore(size)


@contextmanager
def check_slot(session: Session, settings: Settings, keys: list[str]) -> Iterator[None]:
    """Hold one of the process's password check slots. Whoever had to wait looks at the
    lockout again: the failures recorded meanwhile may have locked it out."""
    slots = _slots(settings.PASSWORD_CHECK_CONCURRENCY)
    if not slots.acquire(blocking=False):
        _wait_for_slot(session, settings, slots)
        try:
            refuse_if_locked(session, settings, keys)
        except BaseException:
            slots.release()
            raise
    try:
        yield
    finally:
        slots.release()


def no_room_for_a_check(settings: Settings) -> bool:
    """Whether a password check arriving now would be refused for want of a slot or a waiting
    place. A glance, not a reservation: callers use it only to refuse early, before any statement, so
    a flood of unknown passwords costs neither the database nor more than a moment of a thread;
    a request let through here still goes through ``check_slot``."""
    for semaphore in (_slots(settings.PASSWORD_CHECK_CONCURRENCY),
                      _waiting_places(settings.PASSWORD_CHECK_QUEUE)):
        if semaphore.acquire(blocking=False):
            semaphore.release()
            return False
    return True


def busy(settings: Settings) -> Busy:
    return Busy("Too many logins are being checked; try again shortly.",
                retry_after=max(1, math.ceil(settings.PASSWORD_CHECK_WAIT_SECONDS)))


def _wait_for_slot(session: Session, settings: Settings, slots: threading.BoundedSemaphore) -> None:
    """Wait for a check slot, if a waiting place is free. Waiters hold a server thread each:
    with the queue bounded, a flood is refused at once (503) instead of taking every thread
    from the requests that need no password check."""
    places = _waiting_places(settings.PASSWORD_CHECK_QUEUE)
    if not places.acquire(blocking=False):
        raise busy(settings)
    try:
        # Give the pooled connection back while waiting (the request has only read so far and
        # its objects stay loaded): a queue of logins must not hold the pool either.
        session.commit()
        if not slots.acquire(timeout=settings.PASSWORD_CHECK_WAIT_SECONDS):
            raise busy(settings)
    finally:
        places.release()


def verify(session: Session, settings: Settings, *, username: str | None, address: str | None,
           check: Callable[[], bool], checked: bool = False) -> bool:
    """Whether ``check`` (the password hash comparison; a dummy one for unknown accounts)
    succeeds, under the lockout and the concurrency limit; a failure is recorded.

    ``checked`` says the caller already ran ``refuse_if_locked`` for this attempt."""
    keys = lockout_keys(settings, username, address)
    if not checked:
        refuse_if_locked(session, settings, keys)
    with check_slot(session, settings, keys):
        ok = check()
    if not ok:
        record_failure(session, settings, keys)
    return ok
