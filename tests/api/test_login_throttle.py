"""Failed logins are throttled on every way a password is checked (Basic on the API and OWS, the
OAuth password grant, the login endpoint): after AXES_FAILURE_LIMIT failures 429 with
Retry-After, even for the right password, until the cool-off has passed; the counts are in the
database, so two server processes agree. A flood of wrong passwords from one address costs
bounded memory and does not keep a right password from another address waiting."""

from __future__ import annotations

import datetime as dt
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import psutil
import pytest
from argon2 import PasswordHasher
from fastapi.testclient import TestClient
from sqlalchemy import update

from cartotheca.catalogue import login_guard, oauth
from cartotheca.db.models import LoginFailure
from tests.conftest import basic
from tests.factories import PASSWORD, make_user
from tests.support.ports import free_port
from tests.support.processes import wait_http

# Long enough that a lockout cannot end by itself during a test on a loaded machine; the tests
# let the cool-off pass by moving the recorded failures back in time instead of waiting.
COOLOFF_SECONDS = 60.0
SERVERS_COOLOFF_SECONDS = 60.0
SHORT = {"AXES_FAILURE_LIMIT": 3, "AXES_COOLOFF_TIME": COOLOFF_SECONDS / 3600}


def let_cooloff_pass(db, seconds: float) -> None:
    """What waiting ``seconds`` does to the lockout: every recorded failure is that much older."""
    db.execute(update(LoginFailure).values(
        last_failure=LoginFailure.last_failure - dt.timedelta(seconds=seconds)))
    db.commit()


def _token_form(db, username: str, password: str) -> dict[str, str]:
    application, secret = oauth.create_application(db, name="cli", grant_types=("password",))
    db.commit()
    return {"grant_type": "password", "username": username, "password": password,
            "client_id": application.client_id, "client_secret": secret}


def attempt(client: TestClient, way: str, password: str, form: dict[str, str] | None = None):
    if way == "api":
        return client.get("/api/v2/users", headers=basic("ana", password))
    if way == "ows":
        return client.get("/geoserver/ows", params={"service": "WMS", "request": "GetCapabilities"},
                          headers=basic("ana", password))
    if way == "token":
        return client.post("/o/token/", data={**form, "password": password})
    return client.post("/account/login", json={"username": "ana", "password": password})


REFUSED = {"api": 401, "ows": 401, "token": 400, "login": 401}


@pytest.mark.parametrize("way", ["api", "ows", "token", "login"])
def test_failed_logins_lock_the_account_until_the_cooloff_passes(make_app, db, way):
    make_user(db, "ana")
    form = _token_form(db, "ana", PASSWORD) if way == "token" else None
    with TestClient(make_app(**SHORT)) as client:
        assert attempt(client, way, PASSWORD, form).status_code == 200
        for _ in range(3):
            assert attempt(client, way, "wrong-password", form).status_code == REFUSED[way]
        locked = attempt(client, way, "wrong-password", form)
        assert locked.status_code == 429, locked.text
        assert 1 <= int(locked.headers["Retry-After"]) <= COOLOFF_SECONDS
        if way != "token":
            assert locked.json()["code"] == "throttled"
        # the right password too, while the lockout lasts
        assert attempt(client, way, PASSWORD, form).status_code == 429
        let_cooloff_pass(db, COOLOFF_SECONDS + 0.5)
        assert attempt(client, way, PASSWORD, form).status_code == 200


def test_lockout_by_username_spares_other_accounts(make_app, db):
    make_user(db, "ana")
    make_user(db, "bob")
    with TestClient(make_app(**SHORT, AXES_LOCKOUT_PARAMETERS=["username"])) as client:
        for _ in range(3):
            assert client.get("/api/v2/users", headers=basic("ana", "nope")).status_code == 401
        assert client.get("/api/v2/users", headers=basic("ana", PASSWORD)).status_code == 429
        assert client.get("/api/v2/users", headers=basic("bob", PASSWORD)).status_code == 200


def test_two_server_processes_share_the_counts(db, spawn, base_app):
    """30 wrong passwords for one account spread over two servers: once the limit is reached
    both answer 429 with Retry-After, until the cool-off has passed."""
    make_user(db, "ana")
    env = {"CARTOTHECA_AXES_FAILURE_LIMIT": "5",
           "CARTOTHECA_AXES_COOLOFF_TIME": str(SERVERS_COOLOFF_SECONDS / 3600)}
    bases = []
    for _ in range(2):
        port = free_port()
        spawn(["serve", "--port", str(port)], CARTOTHECA_SITEURL=f"http://127.0.0.1:{port}/",
              **env).start()
        bases.append(f"http://127.0.0.1:{port}")
    for base in bases:
        wait_http(f"{base}/api/v2/")
    statuses = []
    started = time.monotonic()
    for number in range(30):
        response = httpx.get(f"{bases[number % 2]}/api/v2/users", headers=basic("ana", "wrong"),
                             timeout=30)
        statuses.append(response.status_code)
        if response.status_code == 429:
            assert 1 <= int(response.headers["Retry-After"]) <= SERVERS_COOLOFF_SECONDS
    took = time.monotonic() - started
    assert statuses[:5] == [401] * 5 and statuses[5:] == [429] * 25, (statuses, took)
    for base in bases:
        assert httpx.get(f"{base}/api/v2/users", headers=basic("ana", PASSWORD), timeout=30
                         ).status_code == 429
    let_cooloff_pass(db, SERVERS_COOLOFF_SECONDS + 0.5)
    for base in bases:
        assert httpx.get(f"{base}/api/v2/users", headers=basic("ana", PASSWORD), timeout=30
                         ).status_code == 200


def server_rss(pid: int) -> int:
    process = psutil.Process(pid)
    return sum(p.memory_info().rss for p in [process, *process.children(recursive=True)])


def test_wrong_password_flood_keeps_memory_flat_and_right_passwords_fast(db, spawn, base_app):
    """200 concurrent wrong-password requests for made-up accounts, with the default Argon2id
    cost (64 MiB a check), raise the server's memory by less than 100 MB; meanwhile, from other
    addresses, a client whose credentials were verified before is answered, and a first login
    with the right password gets through too (it may wait for a check slot: one check at this
    cost takes about 0.4 s here). Safety bounds, not timings."""
    user = make_user(db, "ana")
    user.password = PasswordHasher().hash(PASSWORD)  # the default cost, as in production
    db.commit()
    port = free_port()
    server = spawn(["serve", "--port", str(port)], CARTOTHECA_SITEURL=f"http://127.0.0.1:{port}/",
                   CARTOTHECA_PASSWORD_HASH_TIME_COST="3", CARTOTHECA_PASSWORD_HASH_MEMORY_KIB="65536",
                   CARTOTHECA_PASSWORD_HASH_PARALLELISM="4")
    server.start()
    base = f"http://127.0.0.1:{port}"
    wait_http(f"{base}/api/v2/")
    # warm up: the dummy hash for unknown accounts is made on first use
    with httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.3"), timeout=30) as other:
        assert other.get(f"{base}/api/v2/users", headers=basic("warm-up", "x")).status_code == 401
    time.sleep(0.5)
    baseline = server_rss(server.proc.pid)
    peak = [baseline]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], server_rss(server.proc.pid))
            time.sleep(0.01)

    sampler = threading.Thread(target=sample)
    sampler.start()

    def wrong(number: int) -> int:
        return httpx.get(f"{base}/api/v2/users", headers=basic(f"nobody{number}", "wrong"),
                         timeout=60).status_code

    right_client = httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.2"), timeout=30)
    first_client = httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.4"), timeout=30)
    make_user(db, "bea").password = PasswordHasher().hash(PASSWORD)
    db.commit()
    try:
        assert right_client.get(f"{base}/api/v2/users", headers=basic("ana", PASSWORD)).status_code == 200
        with ThreadPoolExecutor(max_workers=200) as pool:
            flood = [pool.submit(wrong, n) for n in range(200)]
            time.sleep(0.3)  # the flood is under way
            started = time.monotonic()
            right = right_client.get(f"{base}/api/v2/users", headers=basic("ana", PASSWORD))
            elapsed = time.monotonic() - started
            started = time.monotonic()
            first = first_client.get(f"{base}/api/v2/users", headers=basic("bea", PASSWORD))
            first_elapsed = time.monotonic() - started
            statuses = [f.result() for f in flood]
    finally:
        stop.set()
        sampler.join()
        right_client.close()
        first_client.close()
    # The known client is not queued behind the flood's password checks (it would wait for a
    # slot, then get 503): test_recently_verified_credentials_need_no_check_slot shows why. How
    # fast it answers during the flood is a load figure, printed below and kept in
    # bench/RESULTS.md, not a bound for a shared test machine.
    assert right.status_code == 200, right.text
    assert first.status_code in (200, 503), first.text  # 503 only if no slot came within the wait
    # the flooding address was cut off after AXES_FAILURE_LIMIT failures
    assert statuses.count(401) <= 3 + 2 and set(statuses) <= {401, 429, 503}, statuses
    grown_mb = (peak[0] - baseline) / 2**20
    print(f"flood: peak growth {grown_mb:.0f} MB; known client {elapsed:.3f} s; first login "
          f"{first.status_code} in {first_elapsed:.3f} s; flood answers {sorted(set(statuses))}")
    assert grown_mb < 100, f"server memory grew by {grown_mb:.0f} MB during the flood"


def test_recently_verified_credentials_need_no_check_slot(make_app, db):
    """While every password check slot and waiting place is taken, a client whose Basic
    credentials were verified a moment ago is answered at once, and credentials that would need
    a check are refused with 503 and Retry-After before any statement."""
    make_user(db, "ana")
    make_user(db, "bob")
    settings = {"PASSWORD_CHECK_CONCURRENCY": 1, "PASSWORD_CHECK_QUEUE": 1}
    with TestClient(make_app(**settings)) as client:
        assert client.get("/api/v2/users", headers=basic("ana", PASSWORD)).status_code == 200
        held = [login_guard._slots(1), login_guard._waiting_places(1)]
        for semaphore in held:  # a long check holds the slot, another waits for it
            assert semaphore.acquire(blocking=False)
        try:
            known = client.get("/api/v2/users", headers=basic("ana", PASSWORD))
            new = client.get("/api/v2/users", headers=basic("bob", PASSWORD))
        finally:
            for semaphore in held:
                semaphore.release()
        assert known.status_code == 200, known.text
        assert new.status_code == 503, new.text
        assert int(new.headers["Retry-After"]) >= 1
        # with the slot free again, the new password is checked
        assert client.get("/api/v2/users", headers=basic("bob", PASSWORD)).status_code == 200
