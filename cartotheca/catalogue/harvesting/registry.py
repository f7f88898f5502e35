"""cartotheca.catalogue.harvesting.registry: harvester type names → the classes that serve them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from cartotheca.catalogue.harvesting.csw import CswHarvester
from cartotheca.catalogue.harvesting.geonode import GeonodeHarvester
from cartotheca.catalogue.harvesting.remote import RemoteClient, RemoteResource
from cartotheca.catalogue.harvesting.wms import WmsHarvester
from cartotheca.errors import InvalidInput


class HarvesterType(Protocol):
    """What every harvester type does: say whether the remote answers, and list what it offers."""

    name: str

    def check_availability(self, client: RemoteClient) -> bool: ...

    def list_resources(self, client: RemoteClient) -> list[RemoteResource]: ...


TYPES: dict[str, type] = {"geonode": GeonodeHarvester, "wms": WmsHarvester, "csw": CswHarvester}
# GeoNode names its types by worker class; clients written for it send these.
ALIASES = {
    "geonode.harvesting.harvesters.geonodeharvester.GeonodeUnifiedHarvesterWorker": "geonode",
    "geonode.harvesting.harvesters.wms.OgcWmsHarvester": "wms",
}


def type_name(value: Any) -> str:
    name = ALIASES.get(value, value) if isinstance(value, str) else value
    if name not in TYPES:
        raise InvalidInput(f"harvester_type: \"{value}\" is not a valid choice "
                           f"({', '.join(TYPES)}).")
    return name


def harvester_type(name: str, remote_url: str, config: Mapping[str, Any]) -> HarvesterType:
    return TYPES[type_name(name)](remote_url, config or {})
