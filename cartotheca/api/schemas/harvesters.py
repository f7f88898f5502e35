"""cartotheca.api.schemas.harvesters: harvesters, harvestable resources and sessions on the wire."""

from __future__ import annotations

from typing import Any

from cartotheca.api.schemas.common import iso
from cartotheca.db.models import HarvestableResource, Harvester, HarvestingSession

PLURAL, SINGULAR = "harvesters", "harvester"
HARVESTABLE = "harvestable_resources"
SESSIONS, SESSION = "asynchronous_harvesting_sessions", "asynchronous_harvesting_session"


def harvester_record(h: Harvester, site: str, *, detail: bool = False) -> dict[str, Any]:
    own = f"{site}/api/v2/harvesters/{h.id}/"
    record: dict[str, Any] = {
        "id": h.id,
        "name": h.name,
        "status": h.status,
        "remote_url": h.remote_url,
        "remote_available": h.remote_available,
        "scheduling_enabled": h.scheduling_enabled,
        "harvesting_session_update_frequency": h.harvesting_session_update_frequency,
        "refresh_harvestable_resources_update_frequency":
            h.refresh_harvestable_resources_update_frequency,
        "check_availability_frequency": h.check_availability_frequency,
        "default_owner": h.default_owner_id,
        "links": {"self": own, "harvestable_resources": f"{own}harvestable-resources/"},
    }
    if detail:
        record.update({
            "harvester_type": h.harvester_type,
            "harvester_type_specific_configuration": h.harvester_type_specific_configuration or {},
            "last_checked_availability": iso(h.last_checked_availability),
            "last_checked_harvestable_resources": iso(h.last_checked_harvestable_resources),
            "last_check_harvestable_resources_message": h.last_check_harvestable_resources_message,
            "harvest_new_resources_by_default": h.harvest_new_resources_by_default,
            "delete_orphan_resources_automatically": h.delete_orphan_resources_automatically,
            "last_updated": iso(h.last_updated),
        })
    return record


def harvestable_record(r: HarvestableResource) -> dict[str, Any]:
    return {
        "unique_identifier": r.unique_identifier,
        "title": r.title,
        "should_be_harvested": r.should_be_harvested,
        "last_updated": iso(r.last_updated),
        "status": r.status,
        "remote_resource_type": r.remote_resource_type,
    }


def session_record(s: HarvestingSession) -> dict[str, Any]:
    return {
        "id": s.id,
        "started": iso(s.started),
        "updated": iso(s.updated),
        "ended": iso(s.ended),
        "total_records_to_process": s.total_records_to_process,
        "records_done": s.records_done,
    }
