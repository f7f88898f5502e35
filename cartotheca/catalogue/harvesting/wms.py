"""cartotheca.catalogue.harvesting.wms: a remote OGC WMS; each named layer becomes a remote dataset.

The capabilities document is fetched through net.py and handed to OWSLib as a string, so
OWSLib never opens a connection of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from owslib.wms import WebMapService

from cartotheca.catalogue.harvesting.remote import (
    RemoteClient,
    RemoteResource,
    lonlat_box,
    with_query,
    without_query,
)
from cartotheca.net import FetchFailed

VERSION = "1.3.0"


class WmsHarvester:
    """Named layers of a WMS. Configuration: ``layer_title_filter`` (case-insensitive text a
    layer's title must contain)."""

    name = "wms"

    def __init__(self, remote_url: str, config: Mapping[str, Any]):
        self.url = remote_url.strip()
        self.title_filter = str(config.get("layer_title_filter") or "").lower()

    def capabilities(self, client: RemoteClient) -> WebMapService:
        url = with_query(self.url, {"service": "WMS", "request": "GetCapabilities",
                                    "version": VERSION})
        body = client.get(url)
        try:
            return WebMapService(without_query(self.url), version=VERSION, xml=body)
        except Exception as exc:  # OWSLib raises whatever its XML parsing meets
            raise FetchFailed(f"{self.url} did not answer WMS capabilities "
                              f"({type(exc).__name__})") from None

    def check_availability(self, client: RemoteClient) -> bool:
        self.capabilities(client)
        return True

    def list_resources(self, client: RemoteClient) -> list[RemoteResource]:
        service = self.capabilities(client)
        ows = without_query(self.url)
        found = []
        for name, layer in service.contents.items():
            if not name or (self.title_filter and self.title_filter not in (layer.title or "").lower()):
                continue
            box = lonlat_box(layer.boundingBoxWGS84[:4]) if layer.boundingBoxWGS84 else None
            found.append(RemoteResource(
                unique_identifier=name[:255],
                title=(layer.title or name)[:255],
                resource_type="dataset",
                abstract=layer.abstract or "",
                keywords=[k for k in (layer.keywords or []) if isinstance(k, str) and k.strip()],
                bbox=box,
                links=[{"extension": "html", "link_type": "OGC:WMS", "name": name,
                        "mime": "text/html", "url": ows}],
                ows_url=ows,
                layer_name=name,
            ))
            if len(found) >= client.settings.HARVESTER_MAX_RECORDS:
                break
        return found
