"""Notification outbox: notices commit with their change, and are delivered after it by the
worker thread over a real SMTP server and a real HTTP webhook receiver, with retries."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from cartotheca.catalogue import events
from cartotheca.db.models import Delivery, Favorite, Notice, User
from tests.conftest import basic
from tests.factories import PASSWORD, make_group, make_resource, make_user
from tests.support.ports import free_port
from tests.support.services import Mailbox

FAST = dict(NOTIFICATIONS_POLL_SECONDS=0.05, NOTIFICATIONS_RETRY_BASE_SECONDS=0.05,
            NOTIFICATIONS_MAX_ATTEMPTS=3, TIMEOUT=2, EMAIL_HOST="127.0.0.1")


def wait_for(predicate: Callable[[], object], timeout: float = 8.0) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError("condition not met in time")


class Receiver:
    """A webhook endpoint on a local port; ``answers[path]`` lists the status codes to give
    in turn (then 200)."""

    def __init__(self):
        self.calls: list[tuple[str, int, dict]] = []
        self.answers: dict[str, list[int]] = {}
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's hook name)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with receiver.lock:
                    queue = receiver.answers.get(self.path) or []
                    status = queue.pop(0) if queue else 200
                    receiver.calls.append((self.path, status, body))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *_args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def bodies(self, path: str, status: int = 200) -> list[dict]:
        with self.lock:
            return [body for p, s, body in self.calls if p == path and s == status]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    hook = Receiver()
    yield hook
    hook.server.shutdown()
    hook.server.server_close()


@pytest.fixture
def notifying(make_app, smtp_server):  # noqa: F811
    """``notifying(**settings)`` → (client with the delivery thread running, mailbox)."""
    mailbox, port = smtp_server
    clients = []

    def build(**overrides) -> tuple[TestClient, Mailbox]:
        client = TestClient(make_app(**{**FAST, "EMAIL_PORT": port, **overrides}))
        client.__enter__()
        clients.append(client)
        return client, mailbox

    yield build
    for client in clients:
        client.__exit__(None, None, None)


def messages_to(mailbox: Mailbox, address: str) -> list:
    with mailbox.lock:
        return [m for rcpt, m in mailbox.messages if address in rcpt]


def body_of(message) -> str:
    return message.get_payload(decode=True).decode()


def deliveries(db) -> list[Delivery]:
    db.rollback()
    db.expire_all()
    return list(db.scalars(select(Delivery).order_by(Delivery.id)))


def test_document_upload_notifies_the_owner_and_the_chat(notifying, db, receiver):
    client, mailbox = notifying(CHAT_ENABLED=True, CHAT_WEBHOOK_URLS=[f"{receiver.url}/chat"])
    make_user(db, "ana", email="ana@example.org")
    files = {"doc_file": ("report.txt", b"quarterly figures", "text/plain")}
    created = client.post("/api/v2/documents", headers=basic("ana", PASSWORD), files=files,
                          data={"title": "Quarterly report"})
    assert created.status_code == 200, created.text
    resource_id = db.scalar(select(Notice.resource_id).where(Notice.kind == "document_uploaded"))
    assert resource_id is not None

    (message,) = wait_for(lambda: messages_to(mailbox, "ana@example.org"))
    assert message["Subject"] == "Document uploaded: Quarterly report"
    body = body_of(message)
    assert 'ana uploaded the document "Quarterly report".' in body
    assert f"http://testserver/catalogue/#/document/{resource_id}" in body

    (posted,) = wait_for(lambda: receiver.bodies("/chat"))
    uuid = db.scalar(select(Notice.payload).where(Notice.resource_id == resource_id))["resource"]["uuid"]
    assert posted["event"] == "document_uploaded" and posted["actor"] == "ana"
    assert posted["resource"] == {"id": resource_id, "uuid": uuid, "title": "Quarterly report",
                                  "resource_type": "document",
                                  "detail_url": f"http://testserver/catalogue/#/document/{resource_id}"}
    assert posted["timestamp"].endswith("Z")
    wait_for(lambda: [d.status for d in deliveries(db)] == ["sent", "sent"])


def test_metadata_update_reaches_owner_managers_and_favourites(notifying, db, settings):
    client, mailbox = notifying()
    owner = make_user(db, "owner", email="owner@example.org")
    manager = make_user(db, "manager", email="manager@example.org")
    member = make_user(db, "member", email="member@example.org")
    fan = make_user(db, "fan", email="fan@example.org")
    make_user(db, "idle", email="idle@example.org", is_active=False)
    group = make_group(db, "Rivers team", members=[member], managers=[manager])
    resource = make_resource(db, settings, owner, "Rivers", group=group)
    idle_id = db.scalar(select(Notice.id).limit(1))  # nothing recorded by the factories
    assert idle_id is None
    db.add_all([Favorite(user_id=fan.id, resource_id=resource.id)])
    db.commit()

    patched = client.patch(f"/api/v2/resources/{resource.id}", headers=basic("owner", PASSWORD),
                           json={"title": "Rivers and lakes"})
    assert patched.status_code == 200, patched.text
    wanted = ["fan@example.org", "manager@example.org", "owner@example.org"]
    wait_for(lambda: len(mailbox.messages) >= 3)
    time.sleep(0.2)  # nothing else may follow
    assert mailbox.recipients() == wanted
    assert {m["Subject"] for _, m in mailbox.messages} == {"Metadata updated: Rivers and lakes"}


def test_a_commit_wakes_the_worker_at_once(notifying, db, settings):
    client, mailbox = notifying(NOTIFICATIONS_POLL_SECONDS=600)  # no poll during the test
    owner = make_user(db, "owner", email="owner@example.org")
    resource = make_resource(db, settings, owner, "Springs")
    shared = client.put(f"/api/v2/resources/{resource.id}/set_perms", headers=basic("owner", PASSWORD),
                        json={"users": {}, "groups": {}})
    assert shared.status_code == 200, shared.text
    (message,) = wait_for(lambda: messages_to(mailbox, "owner@example.org"), timeout=5)
    assert message["Subject"] == "Permissions changed: Springs"
    assert 'owner changed the permissions of the dataset "Springs".' in body_of(message)


def test_webhook_retried_after_500_and_a_dead_one_never_stops_the_email(notifying, db, settings,
                                                                         receiver):
    dead = f"http://127.0.0.1:{free_port()}/gone"
    client, mailbox = notifying(CHAT_ENABLED=True,
                                CHAT_WEBHOOK_URLS=[dead, f"{receiver.url}/flaky", f"{receiver.url}/ok"])
    receiver.answers["/flaky"] = [500]
    owner = make_user(db, "owner", email="owner@example.org")
    resource = make_resource(db, settings, owner, "Roads")

    deleted = client.delete(f"/api/v2/resources/{resource.id}", headers=basic("owner", PASSWORD))
    assert deleted.status_code == 204

    (mail,) = wait_for(lambda: messages_to(mailbox, "owner@example.org"))
    assert mail["Subject"] == "Resource deleted: Roads"
    (flaky,) = wait_for(lambda: receiver.bodies("/flaky"))
    assert receiver.bodies("/flaky", 500) == [flaky] and flaky["event"] == "resource_deleted"
    assert receiver.bodies("/ok")[0]["resource"]["title"] == "Roads"

    def settled():
        rows = {d.target: d for d in deliveries(db)}
        return rows if rows[dead].status == "failed" else None

    rows = wait_for(settled)
    assert rows[dead].attempts == 3 and "URLError" in rows[dead].last_error
    assert (rows[f"{receiver.url}/flaky"].status, rows[f"{receiver.url}/flaky"].attempts) == ("sent", 2)
    assert (rows["owner@example.org"].status, rows["owner@example.org"].attempts) == ("sent", 1)


def test_a_rolled_back_transaction_sends_nothing(notifying, db, settings):
    _, mailbox = notifying()
    owner = make_user(db, "owner", email="owner@example.org")
    resource = make_resource(db, settings, owner, "Forests")
    events.record(db, events.METADATA_UPDATED, resource=resource, actor=owner)
    db.flush()
    db.rollback()
    # A commit that fails (here on a duplicate username) takes its notice down with it.
    events.record(db, events.RESOURCE_DELETED, resource=resource, actor=owner)
    db.add(User(username="owner", email="other@example.org"))
    with pytest.raises(IntegrityError):
        db.commit()
    db.rollback()
    events.record(db, events.PERMISSIONS_CHANGED, resource=resource, actor=owner)
    db.commit()

    (message,) = wait_for(lambda: messages_to(mailbox, "owner@example.org"))
    time.sleep(0.2)
    assert message["Subject"] == "Permissions changed: Forests"
    assert len(mailbox.messages) == 1
    assert list(db.scalars(select(Notice.kind))) == ["permissions_changed"]


def test_queue_all_waits_for_send_notifications(notifying, db, settings, admin_auth, receiver):
    client, mailbox = notifying(PINAX_NOTIFICATIONS_QUEUE_ALL=True, CHAT_ENABLED=True,
                                CHAT_WEBHOOK_URLS=[f"{receiver.url}/chat"])
    owner = make_user(db, "owner", email="owner@example.org")
    resource = make_resource(db, settings, owner, "Lakes")
    assert client.patch(f"/api/v2/resources/{resource.id}", headers=basic("owner", PASSWORD),
                        json={"abstract": "Every lake"}).status_code == 200

    wait_for(lambda: receiver.bodies("/chat"))  # chat is not queued: the worker has run
    time.sleep(0.2)
    assert mailbox.messages == []
    wait_for(lambda: [(d.channel, d.status) for d in deliveries(db)]
             == [("email", "queued"), ("chat", "sent")])

    started = client.post("/api/v2/management/commands/send_notifications", headers=admin_auth, json={})
    assert started.status_code == 201, started.text
    job_id = started.json()["data"]["id"]
    job = wait_for(lambda: (j := client.get(f"/api/v2/management/jobs/{job_id}/status",
                                           headers=admin_auth).json())["status"] == "FINISHED" and j)
    assert job["output_message"] == "1 notification(s) sent."
    (message,) = messages_to(mailbox, "owner@example.org")
    assert message["Subject"] == "Metadata updated: Lakes"
    assert events.send_queued(db, settings) == 0  # sent once only


def test_a_claimed_delivery_is_not_sent_twice(make_app, db, settings, smtp_server):  # noqa: F811
    mailbox, port = smtp_server
    app = make_app(**{**FAST, "EMAIL_PORT": port})  # no lifespan: no thread, passes run by hand
    local = app.state.cartotheca.settings
    sessions = app.state.cartotheca.sessions
    owner = make_user(db, "owner", email="owner@example.org")
    resource = make_resource(db, settings, owner, "Hills")
    events.record(db, events.METADATA_UPDATED, resource=resource, actor=owner)
    db.commit()
    assert events.expand_notices(sessions, local) == 1
    assert events.expand_notices(sessions, local) == 0
    (delivery,) = deliveries(db)

    with sessions() as first, sessions() as second:
        assert events._claim(first, local, delivery.id, events.PENDING, events.utcnow())
        first.commit()
        assert events.attempt(second, local, delivery.id) is None  # held by the first
    assert mailbox.messages == []
    db.execute(Delivery.__table__.update().values(claimed_until=events.utcnow()))  # lease ran out
    db.commit()
    time.sleep(0.01)
    report = events.deliver_due(sessions, local)
    assert report.sent == 1 and events.deliver_due(sessions, local).sent == 0
    assert len(mailbox.messages) == 1
    assert deliveries(db)[0].attempts == 2


def test_scale_out_celery_workers_deliver_and_retry(make_app, db, settings, smtp_server,  # noqa: F811
                                                    receiver, spawn, broker_url):  # noqa: F811
    mailbox, port = smtp_server
    receiver.answers["/flaky"] = [500]
    hooks = [f"{receiver.url}/flaky"]
    env = {"CARTOTHECA_TASK_BACKEND": "celery", "CARTOTHECA_CELERY_BROKER_URL": broker_url,
           "CARTOTHECA_EMAIL_HOST": "127.0.0.1", "CARTOTHECA_EMAIL_PORT": str(port),
           "CARTOTHECA_CHAT_ENABLED": "true", "CARTOTHECA_CHAT_WEBHOOK_URLS": json.dumps(hooks),
           "CARTOTHECA_NOTIFICATIONS_POLL_SECONDS": "0.5",
           "CARTOTHECA_NOTIFICATIONS_RETRY_BASE_SECONDS": "0.05"}
    worker = spawn(["worker", "--beat", "--concurrency", "1", "--loglevel", "warning"], **env)
    worker.start()
    owner = make_user(db, "owner", email="owner@example.org")
    resource = make_resource(db, settings, owner, "Coasts")
    app = make_app(TASK_BACKEND="celery", CELERY_BROKER_URL=broker_url)
    try:
        with TestClient(app) as client:
            assert client.patch(f"/api/v2/resources/{resource.id}", headers=basic("owner", PASSWORD),
                                json={"title": "Coastlines"}).status_code == 200
            (message,) = wait_for(lambda: messages_to(mailbox, "owner@example.org"), timeout=60)
        assert message["Subject"] == "Metadata updated: Coastlines"
        # The retry after the 500 came from the beat's poll for due deliveries.
        wait_for(lambda: receiver.bodies("/flaky"), timeout=30)
        assert len(receiver.bodies("/flaky", 500)) == 1, worker.log()[-2000:]
        wait_for(lambda: [d.status for d in deliveries(db)] == ["sent", "sent"])
    finally:
        worker.kill()  # nothing left to finish; a warm shutdown only costs seconds
