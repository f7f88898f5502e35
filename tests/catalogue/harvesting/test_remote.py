"""The harvesters' fetching rules and the remote resource record, without a remote."""

from __future__ import annotations

import datetime as dt
import ipaddress

import pytest

from cartotheca import timeutil
from cartotheca.catalogue.harvesting.remote import (
    RemoteResource,
    address_policy,
    check_remote_url,
)
from cartotheca.errors import InvalidInput
from cartotheca.net import URLRefused
from cartotheca.settings import Settings


def _settings(**values) -> Settings:
    return Settings(**{"PROXY_ALLOWED_HOSTS": ["127.0.0.1", "192.168.7.7"], **values})


def test_address_policy_allows_only_the_listed_private_networks():
    strict = address_policy(_settings())
    assert not strict(ipaddress.ip_address("127.0.0.1"))
    assert not strict(ipaddress.ip_address("::ffff:127.0.0.1"))
    assert strict(ipaddress.ip_address("8.8.8.8"))
    loose = address_policy(_settings(HARVESTER_ALLOWED_PRIVATE_NETWORKS=["127.0.0.0/8"]))
    assert loose(ipaddress.ip_address("127.0.0.2"))
    assert not loose(ipaddress.ip_address("192.168.7.7"))
    with pytest.raises(InvalidInput, match="not a network"):
        address_policy(_settings(HARVESTER_ALLOWED_PRIVATE_NETWORKS=["localhost"]))


def test_remote_urls_are_checked_without_connecting():
    with pytest.raises(URLRefused, match="private"):
        check_remote_url(_settings(), "http://192.168.7.7/")
    with pytest.raises(URLRefused, match="PROXY_ALLOWED_HOSTS"):
        check_remote_url(_settings(), "http://10.0.0.1/")
    with pytest.raises(URLRefused, match="this server's own host"):
        check_remote_url(_settings(PROXY_ALLOWED_HOSTS=["*"]), "http://localhost:8000/")
    check_remote_url(_settings(HARVESTER_ALLOWED_PRIVATE_NETWORKS=["192.168.0.0/16"]),
                     "http://192.168.7.7/")


def test_remote_resource_round_trip_and_hash():
    remote = RemoteResource("u1", "Rivers", "dataset", last_updated=dt.datetime(2024, 5, 1, 12),
                            keywords=["water"], bbox=(0.0, 1.0, 2.0, 3.0))
    again = RemoteResource.from_json(remote.to_json())
    assert again == remote and again.content_hash == remote.content_hash
    again.title = "Streams"
    assert again.content_hash != remote.content_hash
    assert timeutil.read_datetime("2024-05-01T12:00:00.000000Z", any_z=True) == dt.datetime(2024, 5, 1, 12)
    assert timeutil.read_datetime("2024-05-01T14:00:00+02:00", any_z=True) == dt.datetime(2024, 5, 1, 12)
    assert timeutil.read_datetime("yesterday", any_z=True) is None
    assert timeutil.read_datetime(None, any_z=True) is None
