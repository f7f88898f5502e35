"""The services the tests run against: throw-away PostgreSQL databases (PostGIS for the
datastore), Redis and RabbitMQ as Celery brokers, and an SMTP server that keeps what it receives.

A service that is not running skips its tests on a workstation and fails them in CI, where every
service is required.
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import Message
from typing import Any

import pytest
import redis
from aiosmtpd.controller import Controller
from sqlalchemy import create_engine, text

from tests.support.ports import free_port

PG_ADMIN_URL = os.environ.get("CARTOTHECA_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
REDIS_HOST, REDIS_PORT = "127.0.0.1", 6379
RABBITMQ_URL = "amqp://guest:guest@127.0.0.1:5672//"


def unavailable(reason: str) -> None:
    """Skip the test for want of ``reason``; in CI fail it instead, since CI provides everything."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason}, but CI requires it")
    pytest.skip(reason)


def postgres_available() -> bool:
    try:
        engine = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
        with engine.connect():
            pass
        engine.dispose()
        return True
    except Exception:
        return False


@contextmanager
def postgres_database(prefix: str, *, postgis: bool = False) -> Iterator[str]:
    """A new, uniquely named database (so parallel runs never meet) as a URL; dropped afterwards,
    with any connection still open to it terminated first."""
    if not postgres_available():
        unavailable("PostgreSQL is not reachable at 127.0.0.1:5432")
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    try:
        if postgis:
            store = create_engine(url, isolation_level="AUTOCOMMIT")
            with store.connect() as conn:
                conn.execute(text("CREATE EXTENSION IF NOT EXISTS postgis"))
            store.dispose()
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :n"
            ), {"n": name})
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
        admin.dispose()


def redis_available() -> bool:
    try:
        with socket.create_connection((REDIS_HOST, REDIS_PORT), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@contextmanager
def empty_redis_database(number: int) -> Iterator[tuple[str, Any]]:
    """Redis database ``number`` as ``(url, client)``, emptied before and after use."""
    if not redis_available():
        unavailable(f"Redis is not reachable at {REDIS_HOST}:{REDIS_PORT}")
    url = f"redis://{REDIS_HOST}:{REDIS_PORT}/{number}"
    client = redis.Redis.from_url(url)
    client.flushdb()
    try:
        yield url, client
    finally:
        client.flushdb()
        client.close()


def rabbitmq_url() -> str:
    """RabbitMQ at 127.0.0.1:5672 (guest/guest)."""
    try:
        socket.create_connection(("127.0.0.1", 5672), timeout=1).close()
    except OSError:
        unavailable("RabbitMQ is not reachable at 127.0.0.1:5672")
    return RABBITMQ_URL


@dataclass
class Mailbox:
    """Messages an in-process SMTP server received, with their envelopes."""

    messages: list[tuple[list[str], Message]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 (aiosmtpd's hook name)
        with self.lock:
            self.messages.append((list(envelope.rcpt_tos), message_from_bytes(envelope.content)))
        return "250 Message accepted for delivery"

    def recipients(self) -> list[str]:
        return sorted(r for rcpt, _ in self.messages for r in rcpt)


@contextmanager
def smtp_receiver() -> Iterator[tuple[Mailbox, int]]:
    """A real SMTP server on a free port of 127.0.0.1, as ``(mailbox, port)``."""
    mailbox = Mailbox()
    port = free_port()
    controller = Controller(mailbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield mailbox, port
    finally:
        controller.stop()
