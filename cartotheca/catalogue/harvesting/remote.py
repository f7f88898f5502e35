"""cartotheca.catalogue.harvesting.remote: what a remote offers, and fetching from it through net.py.

Every request a harvester makes goes through ``cartotheca.net.fetch``: the host must be in
PROXY_ALLOWED_HOSTS, the whole exchange ends within TIMEOUT, and the address must be public
unless it lies in one of HARVESTER_ALLOWED_PRIVATE_NETWORKS (a test server on loopback, a
catalogue on the organisation's network).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import ipaddress
import json
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

import orjson

from cartotheca import net
from cartotheca.errors import InvalidInput
from cartotheca.settings import Settings


@dataclass
class RemoteResource:
    """One resource of a remote, with the metadata a local copy carries."""

    unique_identifier: str
    title: str
    resource_type: str  # dataset, document, map ... as the remote calls it
    last_updated: dt.datetime | None = None
    abstract: str = ""
    keywords: list[str] = field(default_factory=list)
    date: dt.datetime | None = None
    date_type: str | None = None
    bbox: tuple[float, float, float, float] | None = None  # lon/lat
    thumbnail_url: str | None = None
    links: list[dict[str, str]] = field(default_factory=list)
    ows_url: str | None = None  # datasets: the remote's OWS endpoint
    layer_name: str | None = None  # datasets: the layer's name there
    doc_url: str | None = None  # documents: where the file is downloaded
    extension: str | None = None  # documents
    metadata_only: bool = False
    detail_url: str | None = None  # the record's page on the remote

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("last_updated", "date"):
            value = data[key]
            data[key] = value.isoformat() if value is not None else None
        data["bbox"] = list(self.bbox) if self.bbox is not None else None
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RemoteResource:
        values = dict(data)
        for key in ("last_updated", "date"):
            if values.get(key):
                values[key] = dt.datetime.fromisoformat(values[key])
        if values.get("bbox") is not None:
            values["bbox"] = tuple(values["bbox"])
        return cls(**values)

    @property
    def content_hash(self) -> str:
        """Digest of everything a local copy takes from the remote: a change means an update."""
        return hashlib.sha256(json.dumps(self.to_json(), sort_keys=True).encode()).hexdigest()


def address_policy(settings: Settings) -> net.AddressPolicy:
    """Public addresses, plus those in HARVESTER_ALLOWED_PRIVATE_NETWORKS."""
    networks = []
    for cidr in settings.HARVESTER_ALLOWED_PRIVATE_NETWORKS:
        try:
            networks.append(ipaddress.ip_network(cidr, strict=False))
        except ValueError:
            raise InvalidInput(f"HARVESTER_ALLOWED_PRIVATE_NETWORKS: {cidr!r} is not a network") from None

    def allowed(address: net.IPAddress) -> bool:
        return net.is_public_address(address) or any(address in n for n in networks)

    return allowed


def check_remote_url(settings: Settings, url: str) -> None:
    """Refuse a remote URL now, with the reason, rather than at its first run: not http(s),
    host not in PROXY_ALLOWED_HOSTS, or an address the harvester may not reach."""
    target = net.parse_url(url)
    if not net.host_allowed(target.host, settings.PROXY_ALLOWED_HOSTS):
        raise net.URLRefused(f"remote_url: the host {target.host} is not in PROXY_ALLOWED_HOSTS")
    try:
        net.checked_addresses(target.host, target.port, float(settings.TIMEOUT),
                              address_policy(settings))
    except net.URLRefused as exc:
        raise net.URLRefused(
            f"remote_url: {exc.message} (see HARVESTER_ALLOWED_PRIVATE_NETWORKS)") from None
    except net.FetchFailed:
        return  # an unresolvable name is only unavailable for now


def with_query(url: str, params: dict[str, Any] | list[tuple[str, Any]]) -> str:
    """``url`` with ``params`` appended to whatever query it already has."""
    parts = urlsplit(url)
    extra = urlencode(params)
    query = f"{parts.query}&{extra}" if parts.query else extra
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))


def without_query(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


class RemoteClient:
    """Fetches from one remote with the harvester's address policy and size limit."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.policy = address_policy(settings)

    def get(self, url: str) -> bytes:
        return net.fetch(url, self.settings, max_bytes=self.settings.HARVESTER_MAX_RESPONSE_BYTES,
                         policy=self.policy).body

    def get_json(self, url: str) -> Any:
        body = self.get(url)
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            raise net.FetchFailed(f"{url} did not answer JSON") from None


def lonlat_box(values: Any) -> tuple[float, float, float, float] | None:
    """A valid lon/lat box from four numbers, else None."""
    try:
        minx, miny, maxx, maxy = (float(v) for v in values)
    except (TypeError, ValueError):
        return None
    if -180 <= minx <= maxx <= 180 and -90 <= miny <= maxy <= 90:
        return (minx, miny, maxx, maxy)
    return None
