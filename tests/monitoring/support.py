"""Helpers for monitoring tests: a fresh monitored app, a real SMTP server, running a cycle."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import Message

import pytest
from aiosmtpd.controller import Controller
from fastapi.testclient import TestClient

from cartotheca.db.base import utcnow
from cartotheca.monitoring.collector import CycleReport
from cartotheca.monitoring.periods import align_end


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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def smtp_server() -> Iterator[tuple[Mailbox, int]]:
    mailbox = Mailbox()
    port = free_port()
    controller = Controller(mailbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield mailbox, port
    finally:
        controller.stop()


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
