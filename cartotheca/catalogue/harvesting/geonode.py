"""cartotheca.catalogue.harvesting.geonode: a remote GeoNode (or Cartotheca) REST API v2.

Its datasets and documents are listed from ``api/v2/resources`` (every page), each record
carrying the metadata a local copy needs, so a harvest needs no request per record. A
harvested dataset stays on the remote: it points at the remote's OWS endpoint and layer.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import unquote, urlsplit

from cartotheca import timeutil
from cartotheca.catalogue.harvesting.remote import (
    RemoteClient,
    RemoteResource,
    lonlat_box,
    with_query,
)
from cartotheca.net import FetchFailed

RESOURCE_TYPES = ("dataset", "document")
WMS_LINK_TYPES = ("OGC:WMS",)


def base_url(remote_url: str) -> str:
    """The remote's site root: ``https://host/`` from what the administrator typed."""
    url = remote_url.strip()
    for suffix in ("/api/v2/", "/api/v2"):
        if url.endswith(suffix):
            url = url[: -len(suffix)]
    return url.rstrip("/") + "/"


class GeonodeHarvester:
    """Datasets and documents of a GeoNode API v2. Configuration: ``harvest_datasets`` and
    ``harvest_documents`` (both true by default), as GeoNode's own harvester takes them."""

    name = "geonode"

    def __init__(self, remote_url: str, config: Mapping[str, Any]):
        self.base = base_url(remote_url)
        self.types = [t for t in RESOURCE_TYPES if config.get(f"harvest_{t}s", True) is not False]

    def check_availability(self, client: RemoteClient) -> bool:
        data = client.get_json(f"{self.base}api/v2/")
        return isinstance(data, dict)

    def list_resources(self, client: RemoteClient) -> list[RemoteResource]:
        if not self.types:
            return []
        size = client.settings.HARVESTER_PAGE_SIZE
        found: list[RemoteResource] = []
        page = 1
        while len(found) < client.settings.HARVESTER_MAX_RECORDS:
            params = [("page_size", size), ("page", page), ("sort[]", "pk")]
            params += [("filter{resource_type.in}", t) for t in self.types]
            data = client.get_json(with_query(f"{self.base}api/v2/resources/", params))
            records = data.get("resources") if isinstance(data, dict) else None
            if not isinstance(records, list):
                raise FetchFailed(f"{self.base} did not answer a GeoNode resource list")
            found += [r for r in (self._remote(rec) for rec in records) if r is not None]
            if not records or page * size >= int(data.get("total") or 0):
                break
            page += 1
        return found

    def _remote(self, record: Any) -> RemoteResource | None:
        if not isinstance(record, dict) or record.get("resource_type") not in self.types:
            return None
        identifier = record.get("uuid") or record.get("pk")
        if not identifier:
            return None
        coords = (record.get("extent") or {}).get("coords") if isinstance(record.get("extent"), dict) \
            else None
        links = [_link(item) for item in record.get("links") or [] if isinstance(item, dict)]
        remote = RemoteResource(
            unique_identifier=str(identifier),
            title=str(record.get("title") or identifier)[:255],
            resource_type=record["resource_type"],
            last_updated=timeutil.read_datetime(record.get("last_updated"), any_z=True),
            abstract=str(record.get("abstract") or ""),
            keywords=[str(k["name"]) for k in record.get("keywords") or []
                      if isinstance(k, dict) and k.get("name")],
            date=timeutil.read_datetime(record.get("date"), any_z=True),
            date_type=record.get("date_type"),
            bbox=lonlat_box(coords) if coords else None,
            thumbnail_url=record.get("thumbnail_url") or None,
            links=[link for link in links if link["url"]],
            metadata_only=bool(record.get("metadata_only")),
            detail_url=_absolute(self.base, record.get("detail_url")),
        )
        if remote.resource_type == "dataset":
            remote.layer_name = record.get("alternate") or record.get("name")
            wms = [link["url"] for link in remote.links if link["link_type"] in WMS_LINK_TYPES]
            remote.ows_url = record.get("ows_url") or (wms[0] if wms else f"{self.base}ows")
        else:
            remote.doc_url = record.get("doc_url") or record.get("download_url") or \
                f"{self.base}documents/{record.get('pk')}/download"
            remote.extension = record.get("extension") or _extension(record)
        return remote


def _link(item: dict[str, Any]) -> dict[str, str]:
    return {key: str(item.get(key) or "") for key in ("extension", "link_type", "name", "mime", "url")}


def _absolute(base: str, url: Any) -> str | None:
    if not isinstance(url, str) or not url:
        return None
    return url if url.startswith(("http://", "https://")) else base + url.lstrip("/")


def _extension(record: dict[str, Any]) -> str | None:
    for key in ("href", "name", "title"):
        value = record.get(key)
        if isinstance(value, str):
            suffix = PurePosixPath(unquote(urlsplit(value).path)).suffix.lstrip(".").lower()
            if suffix and suffix.isalnum():
                return suffix
    return None
