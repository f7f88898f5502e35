"""cartotheca.catalogue.harvesting.harvesters: harvesters, their harvestable resources and sessions.

Reading and writing the records, and starting an action. An action (check availability,
refresh the harvestable list, harvest) starts by moving the harvester from ``ready`` to the
action's status in one conditional UPDATE, then records an execution for the engine, so the
same action is never started twice, from a request or from a scheduler in any process.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from cartotheca.catalogue import query
from cartotheca.catalogue.auth import Principal
from cartotheca.catalogue.harvesting import registry
from cartotheca.catalogue.harvesting.remote import check_remote_url
from cartotheca.catalogue.query import Field, FieldMap, ListContext, Listing
from cartotheca.catalogue.resources import parse_id
from cartotheca.db.base import utcnow
from cartotheca.db.models import (
    ExecutionRequest,
    HarvestableResource,
    Harvester,
    HarvestingSession,
    User,
)
from cartotheca.errors import Conflict, InvalidInput, NotFound
from cartotheca.settings import Settings

READY = "ready"
CHECKING = "checking-availability"
REFRESHING = "updating-harvestable-resources"
HARVESTING = "harvesting-resources"
ABORTING_REFRESH = "aborting-update-harvestable-resources"
ABORTING_HARVEST = "aborting-harvesting-resources"
STATUSES = (READY, CHECKING, REFRESHING, HARVESTING, ABORTING_REFRESH, ABORTING_HARVEST)
# action status → the job that performs it, and the kind of session it records (None: none)
ACTIONS: dict[str, tuple[str, str | None]] = {
    CHECKING: ("harvester_check_availability", None),
    REFRESHING: ("harvester_refresh", "discover-harvestable-resources"),
    HARVESTING: ("harvester_harvest", "harvesting"),
}
ABORTS = {ABORTING_REFRESH: REFRESHING, ABORTING_HARVEST: HARVESTING}
FREQUENCIES = ("harvesting_session_update_frequency",
               "refresh_harvestable_resources_update_frequency", "check_availability_frequency")
FLAGS = ("scheduling_enabled", "harvest_new_resources_by_default",
         "delete_orphan_resources_automatically")
WRITABLE = ("name", "remote_url", "harvester_type", "harvester_type_specific_configuration",
            "default_owner", "status", *FREQUENCIES, *FLAGS)
READ_ONLY = ("id", "links", "remote_available", "last_checked_availability",
             "last_checked_harvestable_resources", "last_check_harvestable_resources_message",
             "last_updated")

HARVESTER_FIELDS = FieldMap(
    fields={
        "id": Field(Harvester.id, kind=int, nullable=False),
        "pk": Field(Harvester.id, kind=int, nullable=False),
        "name": Field(Harvester.name),
        "status": Field(Harvester.status),
        "remote_url": Field(Harvester.remote_url),
        "harvester_type": Field(Harvester.harvester_type),
        "remote_available": Field(Harvester.remote_available, kind=bool, nullable=False),
        "scheduling_enabled": Field(Harvester.scheduling_enabled, kind=bool, nullable=False),
        "default_owner": Field(Harvester.default_owner_id, kind=int),
        "last_updated": Field(Harvester.last_updated, kind=dt.datetime),
    },
    search_fields={"name": Harvester.name, "remote_url": Harvester.remote_url},
    default_search_fields=("name",),
    default_sort=(Harvester.id,),
    tiebreak=Harvester.id,
)
HARVESTABLE_FIELDS = FieldMap(
    fields={
        "unique_identifier": Field(HarvestableResource.unique_identifier),
        "title": Field(HarvestableResource.title),
        "should_be_harvested": Field(HarvestableResource.should_be_harvested, kind=bool,
                                     nullable=False),
        "status": Field(HarvestableResource.status),
        "remote_resource_type": Field(HarvestableResource.remote_resource_type),
        "last_updated": Field(HarvestableResource.last_updated, kind=dt.datetime),
    },
    search_fields={"title": HarvestableResource.title,
                   "unique_identifier": HarvestableResource.unique_identifier},
    default_search_fields=("title",),
    default_sort=(HarvestableResource.title,),
    tiebreak=HarvestableResource.id,
)
SESSION_FIELDS = FieldMap(
    fields={
        "id": Field(HarvestingSession.id, kind=int, nullable=False),
        "pk": Field(HarvestingSession.id, kind=int, nullable=False),
        "harvester": Field(HarvestingSession.harvester_id, kind=int, nullable=False),
        "status": Field(HarvestingSession.status),
        "started": Field(HarvestingSession.started, kind=dt.datetime),
        "ended": Field(HarvestingSession.ended, kind=dt.datetime),
    },
    default_sort=(HarvestingSession.id.desc(),),
    tiebreak=HarvestingSession.id,
)


def _listing(ctx: ListContext, stmt, fields: FieldMap) -> Listing:
    return query.page(ctx.session, stmt, ctx.query, fields)


# -- harvesters ------------------------------------------------------------------------------


def list_harvesters(ctx: ListContext) -> Listing:
    return _listing(ctx, select(Harvester), HARVESTER_FIELDS)


def get_harvester(session: Session, raw_id: Any) -> Harvester:
    harvester = session.get(Harvester, parse_id(raw_id))
    if harvester is None:
        raise NotFound()
    return harvester


def _fields(body: Any) -> Mapping[str, Any]:
    if isinstance(body, Mapping) and set(body) == {"harvester"} and isinstance(body["harvester"], Mapping):
        body = body["harvester"]
    if not isinstance(body, Mapping):
        raise InvalidInput("Invalid data. Expected a dictionary.")
    return body


def _text(body: Mapping[str, Any], key: str, limit: int) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{key}: This field is required.")
    if len(value) > limit or "\x00" in value:
        raise InvalidInput(f"{key}: Ensure this field has no more than {limit} characters.")
    return value.strip()


def _flag(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput(f"{key}: Must be a valid boolean.")
    return value


def _minutes(key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 10 ** 6:
        raise InvalidInput(f"{key}: A whole number of minutes from 1 to 1000000 is required.")
    return value


def _owner(session: Session, value: Any) -> int:
    ident = value.get("pk", value.get("id")) if isinstance(value, Mapping) else value
    if isinstance(ident, str) and ident.isdigit():
        ident = int(ident)
    if isinstance(ident, bool) or not isinstance(ident, int) or session.get(User, ident) is None:
        raise InvalidInput(f"default_owner: Invalid pk \"{ident}\" - object does not exist.")
    return ident


def save_harvester(session: Session, settings: Settings, principal: Principal, body: Any,
                   harvester: Harvester | None = None, *,
                   partial: bool = False) -> tuple[Harvester, str | None]:
    """Create (``harvester`` None), replace (PUT) or patch a harvester from a client's body.

    Returns the harvester and the action status the client asked for, if any: the caller starts
    it once the change is committed, as GeoNode does when ``status`` is written."""
    data = _fields(body)
    unknown = [k for k in data if k not in WRITABLE and k not in READ_ONLY]
    if unknown:
        raise InvalidInput(f"{unknown[0]}: unknown field")
    creating = harvester is None
    if creating:
        harvester = Harvester(status=READY, remote_available=False, default_owner_id=principal.id,
                              harvester_type_specific_configuration={},
                              last_check_harvestable_resources_message="")
    if creating or not partial or "name" in data:
        name = _text(data, "name", 255)
        clash = session.scalar(select(Harvester.id).where(Harvester.name == name))
        if clash is not None and clash != harvester.id:
            raise InvalidInput("name: harvester with this name already exists.")
        harvester.name = name
    if creating or not partial or "remote_url" in data:
        url = _text(data, "remote_url", 2048)
        check_remote_url(settings, url)
        harvester.remote_url = url
    if creating or not partial or "harvester_type" in data:
        harvester.harvester_type = registry.type_name(data.get("harvester_type"))
    if "harvester_type_specific_configuration" in data:
        config = data["harvester_type_specific_configuration"]
        if config is None:
            config = {}
        if not isinstance(config, Mapping):
            raise InvalidInput("harvester_type_specific_configuration: expected a JSON object")
        harvester.harvester_type_specific_configuration = dict(config)
    if "default_owner" in data:
        harvester.default_owner_id = _owner(session, data["default_owner"])
    for key in FREQUENCIES:
        if key in data:
            setattr(harvester, key, _minutes(key, data[key]))
    for key in FLAGS:
        if key in data:
            setattr(harvester, key, _flag(key, data[key]))
    wanted = data.get("status")
    if wanted is not None and (creating or wanted != harvester.status):
        if creating or wanted not in (*ACTIONS, *ABORTS):
            raise InvalidInput(f"status: \"{wanted}\" cannot be set here; expected one of "
                               f"{', '.join((*ACTIONS, *ABORTS))}.")
    else:
        wanted = None
    if creating:
        session.add(harvester)
    harvester.last_updated = utcnow()
    session.flush()
    return harvester, wanted


def delete_harvester(session: Session, harvester: Harvester) -> None:
    """The harvester, its harvestable list and sessions go; resources it harvested stay."""
    session.delete(harvester)
    session.flush()


# -- actions ---------------------------------------------------------------------------------


def claim(session: Session, harvester_id: int, action: str, now: dt.datetime,
          *extra: Any) -> bool:
    """Move the harvester from ready to ``action``: one conditional UPDATE, so of several
    requests or schedulers only one wins. ``extra`` conditions narrow the claim further."""
    values: dict[str, Any] = {"status": action, "last_updated": now}
    if action == CHECKING:
        values["last_checked_availability"] = now
    elif action == REFRESHING:
        values["last_checked_harvestable_resources"] = now
    elif action == HARVESTING:
        values["last_harvesting_started"] = now
    result = session.execute(
        update(Harvester).where(Harvester.id == harvester_id, Harvester.status == READY, *extra)
        .values(**values).execution_options(synchronize_session=False))
    return result.rowcount == 1


def record_execution(session: Session, harvester_id: int, action: str, user_id: int | None,
                     params: Mapping[str, Any] | None = None) -> str:
    """The session row (for refresh and harvest) and the execution the engine runs."""
    job, session_type = ACTIONS[action]
    inputs: dict[str, Any] = {"harvester_id": harvester_id, **(params or {})}
    if session_type is not None:
        run = HarvestingSession(harvester_id=harvester_id, session_type=session_type,
                                status="pending", session_details="")
        session.add(run)
        session.flush()
        inputs["session_id"] = run.id
    execution = ExecutionRequest(user_id=user_id, func_name=job, action="harvesting",
                                 source="harvesters", name=f"{action} (harvester {harvester_id})",
                                 input_params=inputs, output_params={}, status="ready")
    session.add(execution)
    session.flush()
    return execution.exec_id


def start_action(session: Session, harvester: Harvester, action: str, user_id: int | None,
                 params: Mapping[str, Any] | None = None) -> str | None:
    """Start ``action`` (or an abort) on demand; returns the execution id to dispatch once
    committed (None for an abort, which the running job notices)."""
    if action in ABORTS:
        result = session.execute(
            update(Harvester).where(Harvester.id == harvester.id, Harvester.status == ABORTS[action])
            .values(status=action, last_updated=utcnow()).execution_options(synchronize_session=False))
        if result.rowcount != 1:
            raise InvalidInput(f"status: nothing to abort; the harvester is {harvester.status}.")
        session.refresh(harvester)
        return None
    if not claim(session, harvester.id, action, utcnow()):
        session.refresh(harvester)
        raise Conflict(f"status: the harvester is busy ({harvester.status}); try again when it "
                       "is ready.")
    exec_id = record_execution(session, harvester.id, action, user_id, params)
    session.refresh(harvester)
    return exec_id


# -- harvestable resources -------------------------------------------------------------------


def list_harvestable(ctx: ListContext, harvester: Harvester
                     ) -> Listing:
    stmt = select(HarvestableResource).where(HarvestableResource.harvester_id == harvester.id)
    return _listing(ctx, stmt, HARVESTABLE_FIELDS)


def select_harvestable(session: Session, harvester: Harvester, body: Any) -> list[HarvestableResource]:
    """The list-level PATCH: ``[{"unique_identifier", "should_be_harvested"}, ...]``."""
    if isinstance(body, Mapping) and set(body) == {"harvestable_resources"}:
        body = body["harvestable_resources"]
    if not isinstance(body, list):
        raise InvalidInput("Expected a list of {\"unique_identifier\", \"should_be_harvested\"} items.")
    wanted: dict[str, bool] = {}
    for item in body:
        if not isinstance(item, Mapping) or not isinstance(item.get("unique_identifier"), str):
            raise InvalidInput("unique_identifier: This field is required.")
        wanted[item["unique_identifier"]] = _flag("should_be_harvested", item.get("should_be_harvested"))
    rows = session.scalars(select(HarvestableResource).where(
        HarvestableResource.harvester_id == harvester.id,
        HarvestableResource.unique_identifier.in_(list(wanted)))).all() if wanted else []
    missing = set(wanted) - {r.unique_identifier for r in rows}
    if missing:
        raise InvalidInput(f"unique_identifier: \"{sorted(missing)[0]}\" is not a harvestable "
                           "resource of this harvester.")
    for row in rows:
        row.should_be_harvested = wanted[row.unique_identifier]
    session.flush()
    return sorted(rows, key=lambda r: r.title)


# -- sessions --------------------------------------------------------------------------------


def list_sessions(ctx: ListContext) -> Listing:
    return _listing(ctx, select(HarvestingSession), SESSION_FIELDS)


def get_session(session: Session, raw_id: Any) -> HarvestingSession:
    run = session.get(HarvestingSession, parse_id(raw_id))
    if run is None:
        raise NotFound()
    return run
