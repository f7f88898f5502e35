"""cartotheca.api.routes.harvesters: harvesters, their harvestable resources, harvesting sessions.

Lists are open to everyone, as GeoNode's IsAdminOrListOnly has it; everything else is for
superusers. Writing ``status`` to an action state starts that action (GeoNode's way of asking
for a check, a refresh or a harvest on demand); the answer shows the harvester already in it.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request

from cartotheca import siteurl
from cartotheca.api.deps import (
    DbDep,
    PrincipalDep,
    SettingsDep,
    app_state,
    list_context,
    read_body,
    require_user,
)
from cartotheca.api.responses import JSON, no_content
from cartotheca.api.schemas import harvesters as wire
from cartotheca.api.schemas.common import envelope
from cartotheca.catalogue.auth import Principal
from cartotheca.catalogue.harvesting import harvesters as domain
from cartotheca.errors import PermissionDenied

router = APIRouter(tags=["harvesters"])


def require_superuser(principal: Annotated[Principal, Depends(require_user)]) -> Principal:
    if not principal.is_superuser:
        raise PermissionDenied()
    return principal


SuperuserDep = Annotated[Principal, Depends(require_superuser)]


def _start(request: Request, db, harvester, action: str | None, user_id: int | None) -> None:
    """Commit, then start the action asked for (if any) and dispatch its execution."""
    db.commit()
    if action is None:
        return
    exec_id = domain.start_action(db, harvester, action, user_id)
    db.commit()
    if exec_id is not None:
        app_state(request).tasks.dispatch(exec_id)


@router.get("/api/v2/harvesters", summary="Harvesters")
def list_harvesters(request: Request, db: DbDep, principal: PrincipalDep, settings: SettingsDep) -> JSON:
    listing = domain.list_harvesters(list_context(request, db, principal))
    items = [wire.harvester_record(h, siteurl.base(settings)) for h in listing.rows]
    return JSON(envelope(request, wire.PLURAL, items, total=listing.total, page=listing.page,
                         page_size=listing.page_size))


@router.post("/api/v2/harvesters", summary="Create a harvester (superuser)")
def create_harvester(request: Request, db: DbDep, principal: SuperuserDep, settings: SettingsDep,
                     body=Depends(read_body)) -> JSON:
    fields = domain.HarvesterFields.model_validate(body, context={"complete": True})
    harvester, action = domain.save_harvester(db, settings, principal, fields)
    _start(request, db, harvester, action, principal.id)
    return JSON({wire.SINGULAR: wire.harvester_record(harvester, siteurl.base(settings), detail=True)},
                status_code=201)


@router.get("/api/v2/harvesters/{harvester_id}", summary="One harvester (superuser)")
def get_harvester(harvester_id: str, db: DbDep, _: SuperuserDep, settings: SettingsDep) -> JSON:
    harvester = domain.get_harvester(db, harvester_id)
    return JSON({wire.SINGULAR: wire.harvester_record(harvester, siteurl.base(settings), detail=True)})


@router.put("/api/v2/harvesters/{harvester_id}", summary="Replace a harvester (superuser)")
@router.patch("/api/v2/harvesters/{harvester_id}",
              summary="Change a harvester; status starts an action (superuser)")
def update_harvester(request: Request, harvester_id: str, db: DbDep, principal: SuperuserDep,
                     settings: SettingsDep, body=Depends(read_body)) -> JSON:
    harvester = domain.get_harvester(db, harvester_id)
    fields = domain.HarvesterFields.model_validate(
        body, context={"complete": request.method != "PATCH"})
    harvester, action = domain.save_harvester(db, settings, principal, fields, harvester)
    _start(request, db, harvester, action, principal.id)
    return JSON({wire.SINGULAR: wire.harvester_record(harvester, siteurl.base(settings), detail=True)})


@router.delete("/api/v2/harvesters/{harvester_id}", summary="Delete a harvester (superuser)")
def delete_harvester(harvester_id: str, db: DbDep, _: SuperuserDep):
    domain.delete_harvester(db, domain.get_harvester(db, harvester_id))
    db.commit()
    return no_content()


@router.get("/api/v2/harvesters/{harvester_id}/harvestable-resources",
            summary="What a harvester can harvest")
def list_harvestable(request: Request, harvester_id: str, db: DbDep, principal: PrincipalDep) -> JSON:
    harvester = domain.get_harvester(db, harvester_id)
    listing = domain.list_harvestable(list_context(request, db, principal), harvester)
    items = [wire.harvestable_record(r) for r in listing.rows]
    return JSON(envelope(request, wire.HARVESTABLE, items, total=listing.total, page=listing.page,
                         page_size=listing.page_size))


@router.patch("/api/v2/harvesters/{harvester_id}/harvestable-resources",
              summary="Choose what to harvest (superuser)")
def select_harvestable(harvester_id: str, db: DbDep, _: SuperuserDep, body=Depends(read_body)) -> JSON:
    harvester = domain.get_harvester(db, harvester_id)
    rows = domain.select_harvestable(db, harvester, domain.HarvestableSelection.model_validate(body))
    db.commit()
    return JSON([wire.harvestable_record(r) for r in rows])


@router.get("/api/v2/harvesting-sessions", summary="Harvesting sessions")
def list_sessions(request: Request, db: DbDep, principal: PrincipalDep) -> JSON:
    listing = domain.list_sessions(list_context(request, db, principal))
    items = [wire.session_record(s) for s in listing.rows]
    return JSON(envelope(request, wire.SESSIONS, items, total=listing.total, page=listing.page,
                         page_size=listing.page_size))


@router.get("/api/v2/harvesting-sessions/{session_id}", summary="One harvesting session (superuser)")
def get_session(session_id: str, db: DbDep, _: SuperuserDep) -> JSON:
    return JSON({wire.SESSION: wire.session_record(domain.get_session(db, session_id))})
