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

from pydantic import BaseModel, ValidationInfo, field_validator, model_validator
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from cartotheca.catalogue import query
from cartotheca.catalogue.auth import Principal
from cartotheca.catalogue.harvesting import registry
from cartotheca.catalogue.harvesting.remote import check_remote_url
from cartotheca.catalogue.inputs import invalid
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


class HarvesterFields(BaseModel):
    """A client's harvester object (or ``{"harvester": {...}}``), checked: unknown keys are
    refused, read-only ones sent back are ignored. Parsed with ``context={"complete": True}``
    when creating or replacing (PUT): name, URL and type are then required."""

    name: str | None = None
    remote_url: str | None = None
    harvester_type: str | None = None
    harvester_type_specific_configuration: dict[str, Any] | None = None
    default_owner: int | None = None
    harvesting_session_update_frequency: int | None = None
    refresh_harvestable_resources_update_frequency: int | None = None
    check_availability_frequency: int | None = None
    scheduling_enabled: bool | None = None
    harvest_new_resources_by_default: bool | None = None
    delete_orphan_resources_automatically: bool | None = None
    status: Any = None

    @model_validator(mode="before")
    @classmethod
    def _object(cls, data: Any, info: ValidationInfo) -> Any:
        if isinstance(data, Mapping) and set(data) == {"harvester"} and \
                isinstance(data["harvester"], Mapping):
            data = data["harvester"]
        if not isinstance(data, Mapping):
            raise invalid("Invalid data. Expected a dictionary.")
        unknown = [k for k in data if k not in WRITABLE and k not in READ_ONLY]
        if unknown:
            raise invalid(f"{unknown[0]}: unknown field")
        data = {k: v for k, v in data.items() if k not in READ_ONLY}
        if info.context and info.context.get("complete"):
            for key in ("name", "remote_url", "harvester_type"):
                data.setdefault(key, None)
        return data

    @field_validator("name", "remote_url", mode="plain")
    @classmethod
    def _text(cls, value: Any, info: ValidationInfo) -> str:
        key = info.field_name
        limit = 255 if key == "name" else 2048
        if not isinstance(value, str) or not value.strip():
            raise invalid(f"{key}: This field is required.")
        if len(value) > limit or "\x00" in value:
            raise invalid(f"{key}: Ensure this field has no more than {limit} characters.")
        return value.strip()

    @field_validator("harvester_type", mode="plain")
    @classmethod
    def _type(cls, value: Any) -> str:
        try:
            return registry.type_name(value)
        except InvalidInput as exc:
            raise invalid(exc.message) from None

    @field_validator("harvester_type_specific_configuration", mode="plain")
    @classmethod
    def _config(cls, value: Any) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise invalid("harvester_type_specific_configuration: expected a JSON object")
        return dict(value)

    @field_validator("default_owner", mode="plain")
    @classmethod
    def _owner(cls, value: Any) -> int:
        ident = value.get("pk", value.get("id")) if isinstance(value, Mapping) else value
        if isinstance(ident, str) and ident.isdigit():
            ident = int(ident)
        if isinstance(ident, bool) or not isinstance(ident, int):
            raise invalid(owner_unknown(ident))
        return ident

    @field_validator(*FREQUENCIES, mode="plain")
    @classmethod
    def _minutes(cls, value: Any, info: ValidationInfo) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 10 ** 6:
            raise invalid(f"{info.field_name}: A whole number of minutes from 1 to 1000000 is "
                          "required.")
        return value

    @field_validator(*FLAGS, mode="plain")
    @classmethod
    def _flag(cls, value: Any, info: ValidationInfo) -> bool:
        return _boolean(str(info.field_name), value)


def owner_unknown(ident: Any) -> str:
    return f"default_owner: Invalid pk \"{ident}\" - object does not exist."


def _boolean(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise invalid(f"{key}: Must be a valid boolean.")
    return value


def save_harvester(session: Session, settings: Settings, principal: Principal,
                   fields: HarvesterFields,
                   harvester: Harvester | None = None) -> tuple[Harvester, str | None]:
    """Create (``harvester`` None), replace or patch a harvester from a client's checked fields.

    Returns the harvester and the action status the client asked for, if any: the caller starts
    it once the change is committed, as GeoNode does when ``status`` is written."""
    given = fields.model_fields_set
    creating = harvester is None
    if harvester is None:
        harvester = Harvester(status=READY, remote_available=False, default_owner_id=principal.id,
                              harvester_type_specific_configuration={},
                              last_check_harvestable_resources_message="")
    if fields.name is not None:
        clash = session.scalar(select(Harvester.id).where(Harvester.name == fields.name))
        if clash is not None and clash != harvester.id:
            raise InvalidInput("name: harvester with this name already exists.")
        harvester.name = fields.name
    if fields.remote_url is not None:
        check_remote_url(settings, fields.remote_url)
        harvester.remote_url = fields.remote_url
    if fields.harvester_type is not None:
        harvester.harvester_type = fields.harvester_type
    if fields.harvester_type_specific_configuration is not None:
        harvester.harvester_type_specific_configuration = fields.harvester_type_specific_configuration
    if fields.default_owner is not None:
        if session.get(User, fields.default_owner) is None:
            raise InvalidInput(owner_unknown(fields.default_owner))
        harvester.default_owner_id = fields.default_owner
    for key in (*FREQUENCIES, *FLAGS):
        if key in given:
            setattr(harvester, key, getattr(fields, key))
    wanted = fields.status
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


class HarvestableSelection(BaseModel):
    """The list-level PATCH of harvestable resources: ``[{"unique_identifier",
    "should_be_harvested"}, ...]``, bare or as ``{"harvestable_resources": [...]}``."""

    wanted: dict[str, bool]

    @model_validator(mode="before")
    @classmethod
    def _items(cls, body: Any) -> Any:
        if isinstance(body, Mapping) and set(body) == {"harvestable_resources"}:
            body = body["harvestable_resources"]
        if not isinstance(body, list):
            raise invalid("Expected a list of {\"unique_identifier\", \"should_be_harvested\"} items.")
        wanted: dict[str, bool] = {}
        for item in body:
            if not isinstance(item, Mapping) or not isinstance(item.get("unique_identifier"), str):
                raise invalid("unique_identifier: This field is required.")
            wanted[item["unique_identifier"]] = _boolean("should_be_harvested",
                                                         item.get("should_be_harvested"))
        return {"wanted": wanted}


def select_harvestable(session: Session, harvester: Harvester,
                       selection: HarvestableSelection) -> list[HarvestableResource]:
    """Mark which of the harvester's resources are to be harvested."""
    wanted = selection.wanted
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
