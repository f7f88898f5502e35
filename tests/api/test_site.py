"""The site URL each request is answered with (cartotheca.api.site, cartotheca.siteurl).

``request_site`` reads real ASGI scopes as uvicorn builds them; the live-server tests in
``tests/clients/test_site_url.py`` run the same code behind ``cartotheca serve``.
"""

from __future__ import annotations

import datetime as dt

import pytest
from pydantic import ValidationError

from cartotheca import siteurl
from cartotheca.api.site import TrustedProxies, request_site
from cartotheca.catalogue import event_messages, events
from cartotheca.db.models import Notice
from cartotheca.settings import Settings
from tests.factories import make_resource, make_user

PROXY = {"x-forwarded-proto": "https", "x-forwarded-host": "maps.example.org", "x-forwarded-prefix": "/geo/"}


def scope(host: str | None = "127.0.0.1:8811", client: str = "127.0.0.1", root_path: str = "",
          scheme: str = "http", **headers: str) -> dict:
    pairs = [(b"host", host.encode())] if host is not None else []
    pairs += [(name.encode(), value.encode()) for name, value in headers.items()]
    return {"type": "http", "scheme": scheme, "headers": pairs, "client": (client, 50000),
            "server": ("127.0.0.1", 8811), "root_path": root_path, "path": "/api/v2/"}


LOOPBACK = TrustedProxies(["127.0.0.1", "::1"])


def test_the_request_names_the_site():
    assert request_site(scope(), LOOPBACK) == "http://127.0.0.1:8811/"
    assert request_site(scope("Catalogue.example:80", root_path="/cat/"), LOOPBACK) == \
        "http://Catalogue.example:80/cat/"
    assert request_site(scope("[::1]:8811"), LOOPBACK) == "http://[::1]:8811/"
    # HTTP/1.0 without Host: the address the server listens on
    assert request_site(scope(None), LOOPBACK) == "http://127.0.0.1:8811/"


@pytest.mark.parametrize("host", ["evil.example/x", "a b", "user@evil.example", "evil.example:80:80", ""])
def test_a_host_that_cannot_stand_in_a_url_gives_none(host):
    headers = scope(host)
    if host == "":
        headers["server"] = None
    assert request_site(headers, LOOPBACK) is None


def test_forwarded_headers_from_a_trusted_proxy():
    assert request_site(scope(**PROXY), LOOPBACK) == "https://maps.example.org/geo/"
    # several proxies: the first (outermost) value counts
    many = {**PROXY, "x-forwarded-host": "maps.example.org:8443, inner.local"}
    assert request_site(scope(**many), LOOPBACK) == "https://maps.example.org:8443/geo/"
    # a value that is no host, scheme or path is ignored, the rest still applies
    odd = {"x-forwarded-proto": "gopher", "x-forwarded-host": "bad host", "x-forwarded-prefix": "geo"}
    assert request_site(scope(**odd), LOOPBACK) == "http://127.0.0.1:8811/"


def test_forwarded_headers_from_anyone_else_are_ignored():
    assert request_site(scope(client="192.0.2.7", **PROXY), LOOPBACK) == "http://127.0.0.1:8811/"
    block = TrustedProxies(["10.0.0.0/8"])
    assert request_site(scope(client="10.1.2.3", **PROXY), block) == "https://maps.example.org/geo/"
    assert request_site(scope(client="127.0.0.1", **PROXY), block) == "http://127.0.0.1:8811/"
    assert request_site(scope(client="192.0.2.7", **PROXY), TrustedProxies(["*"])) == \
        "https://maps.example.org/geo/"
    assert "not-an-ip" not in LOOPBACK and None not in LOOPBACK


@pytest.fixture(autouse=True)
def _no_siteurl_from_the_environment(monkeypatch):
    monkeypatch.delenv("CARTOTHECA_SITEURL", raising=False)


def test_forwarded_allow_ips_must_be_addresses(tmp_path):
    assert Settings(DATA_DIR=tmp_path, FORWARDED_ALLOW_IPS=["10.0.0.0/8", "*"]).FORWARDED_ALLOW_IPS == \
        ["10.0.0.0/8", "*"]
    with pytest.raises(ValidationError, match="FORWARDED_ALLOW_IPS"):
        Settings(DATA_DIR=tmp_path, FORWARDED_ALLOW_IPS=["proxy.local"])


def test_siteurl_wins_when_set_and_the_request_decides_when_not(tmp_path):
    unset = Settings(DATA_DIR=tmp_path)
    given = Settings(DATA_DIR=tmp_path, SITEURL="https://public.example/geo")
    assert not siteurl.is_configured(unset) and siteurl.is_configured(given)
    assert siteurl.url(unset) == "http://127.0.0.1:8000/"  # no request in flight
    with siteurl.serving("http://127.0.0.1:8811/sub/"):
        assert siteurl.url(unset) == "http://127.0.0.1:8811/sub/"
        assert siteurl.base(unset) == "http://127.0.0.1:8811/sub"
        assert siteurl.path(unset) == "/sub"
        assert siteurl.url(given) == "https://public.example/geo/"
        assert siteurl.of_request() == "http://127.0.0.1:8811/sub/"
    assert siteurl.of_request() is None


def test_notices_link_to_the_site_of_the_request_that_made_them(tmp_path):
    resource = {"id": 7, "uuid": "u", "title": "Wells", "resource_type": "dataset",
                "detail_path": "/catalogue/#/dataset/7"}
    made_in_request = Notice(kind="dataset_published", created=dt.datetime(2026, 1, 2), payload={
        "actor": "ana", "resource": resource, "site": "http://10.0.0.5:8811/"})
    made_by_worker = Notice(kind="dataset_published", created=dt.datetime(2026, 1, 2),
                            payload={"actor": "ana", "resource": resource})
    unset = Settings(DATA_DIR=tmp_path)
    given = Settings(DATA_DIR=tmp_path, SITEURL="https://public.example/")
    body = event_messages.email_message
    assert "http://10.0.0.5:8811/catalogue/#/dataset/7" in body(unset, made_in_request)[1]
    assert "http://127.0.0.1:8000/catalogue/#/dataset/7" in body(unset, made_by_worker)[1]
    assert "https://public.example/catalogue/#/dataset/7" in body(given, made_in_request)[1]
    assert event_messages.chat_payload(unset, made_in_request)["resource"]["detail_url"] == \
        "http://10.0.0.5:8811/catalogue/#/dataset/7"


def test_a_notice_keeps_the_site_of_its_request(db, settings):
    resource = make_resource(db, settings, make_user(db), "Wells")
    with siteurl.serving("http://10.0.0.5:8811/"):
        in_request = events.record(db, events.DATASET_PUBLISHED, resource=resource)
    outside = events.record(db, events.DATASET_PUBLISHED, resource=resource)
    assert in_request.payload["site"] == "http://10.0.0.5:8811/"
    assert "site" not in outside.payload
    db.rollback()
