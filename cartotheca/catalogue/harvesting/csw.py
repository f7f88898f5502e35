"""cartotheca.catalogue.harvesting.csw: a remote OGC CSW 2.0.2; its records become metadata-only resources.

Records are read page by page with KVP GetRecords (Dublin Core, full element set), fetched
through net.py and parsed safely here; OWSLib's ``CswRecord`` reads each record element.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from owslib.catalogue.csw2 import CswRecord

from cartotheca import timeutil, xmlsafe
from cartotheca.catalogue.harvesting.remote import (
    RemoteClient,
    RemoteResource,
    lonlat_box,
    with_query,
)
from cartotheca.errors import InvalidInput
from cartotheca.net import FetchFailed

CSW = "http://www.opengis.net/cat/csw/2.0.2"
NS = {"csw": CSW}
LOCAL_TYPES = ("dataset", "document", "map")


class CswHarvester:
    """Records of a CSW catalogue. Configuration: ``max_records`` (records listed at most)."""

    name = "csw"

    def __init__(self, remote_url: str, config: Mapping[str, Any]):
        self.url = remote_url.strip()
        self.max_records = config.get("max_records")

    def _get(self, client: RemoteClient, params: dict[str, Any]):
        body = client.get(with_query(self.url, {"service": "CSW", "version": "2.0.2", **params}))
        try:
            return xmlsafe.parse(body, "CSW response")
        except InvalidInput:
            raise FetchFailed(f"{self.url} did not answer CSW XML") from None

    def check_availability(self, client: RemoteClient) -> bool:
        root = self._get(client, {"request": "GetCapabilities"})
        return root.tag.endswith("Capabilities")

    def list_resources(self, client: RemoteClient) -> list[RemoteResource]:
        limit = min(int(self.max_records or client.settings.HARVESTER_MAX_RECORDS),
                    client.settings.HARVESTER_MAX_RECORDS)
        size = client.settings.HARVESTER_PAGE_SIZE
        found: list[RemoteResource] = []
        position = 1
        while len(found) < limit:
            root = self._get(client, {
                "request": "GetRecords", "typeNames": "csw:Record", "resultType": "results",
                "elementSetName": "full", "outputSchema": CSW, "startPosition": position,
                "maxRecords": size,
            })
            results = root.find("csw:SearchResults", NS)
            if results is None:
                raise FetchFailed(f"{self.url} did not answer GetRecords results")
            records = results.findall("csw:Record", NS)
            found += [r for r in (_remote(CswRecord(el)) for el in records) if r is not None]
            following = int(results.get("nextRecord") or 0)
            if not records or following <= position or following == 0:
                break
            position = following
        return found[:limit]


def _remote(record: CswRecord) -> RemoteResource | None:
    if not record.identifier:
        return None
    kind = (record.type or "dataset").lower()
    box = None
    if record.bbox is not None:
        box = lonlat_box((record.bbox.minx, record.bbox.miny, record.bbox.maxx, record.bbox.maxy))
    links = [{"extension": "", "link_type": uri.get("protocol") or "WWW:LINK",
              "name": uri.get("name") or "", "mime": "", "url": uri.get("url") or ""}
             for uri in (record.uris or []) + (record.references or []) if uri.get("url")]
    return RemoteResource(
        unique_identifier=record.identifier[:255],
        title=(record.title or record.identifier)[:255],
        resource_type=kind if kind in LOCAL_TYPES else "dataset",
        last_updated=timeutil.read_datetime(record.modified, any_z=True),
        abstract=record.abstract or "",
        keywords=[s for s in record.subjects or [] if s and s.strip()],
        date=(timeutil.read_datetime(record.date, any_z=True)
              or timeutil.read_datetime(record.created, any_z=True)),
        bbox=box,
        links=links,
        metadata_only=True,
    )
