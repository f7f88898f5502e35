"""cartotheca.catalogue.harvesting.runs: the harvester actions the engine's jobs perform.

Each action ends with the harvester back in ``ready``, whatever happened. A remote that cannot
be reached (or may not be: URL refused) leaves ``remote_available`` false and changes nothing
that was listed or harvested before. A harvest commits after each record, so its session's
counts are seen while it runs and a failure keeps what was already harvested; an administrator
stops it by setting ``aborting-harvesting-resources``, read between records.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from cartotheca.catalogue import documents
from cartotheca.catalogue.harvesting import local, registry
from cartotheca.catalogue.harvesting.harvesters import ABORTS, READY
from cartotheca.catalogue.harvesting.remote import RemoteClient, RemoteResource
from cartotheca.db.base import utcnow
from cartotheca.db.models import HarvestableResource, Harvester, HarvestingSession, Resource
from cartotheca.errors import CartothecaError, NotFound
from cartotheca.net import FetchFailed, URLRefused
from cartotheca.settings import Settings

REMOTE_ERRORS = (FetchFailed, URLRefused)
COMMIT_EVERY = 50  # harvestable rows written per transaction while refreshing
Progress = Callable[[str], None]


class RemoteUnavailable(Exception):
    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def _harvester(session: Session, harvester_id: int) -> Harvester:
    harvester = session.get(Harvester, harvester_id)
    if harvester is None:
        raise NotFound(f"harvester {harvester_id} no longer exists")
    return harvester


def _listed(settings: Settings, harvester: Harvester) -> list[RemoteResource]:
    kind = registry.harvester_type(harvester.harvester_type, harvester.remote_url,
                                   harvester.harvester_type_specific_configuration)
    try:
        return kind.list_resources(RemoteClient(settings))
    except REMOTE_ERRORS as exc:
        raise RemoteUnavailable(exc.message) from None


def _guarded(session: Session, harvester_id: int, run_id: int | None,
             action: Callable[[Harvester, HarvestingSession | None], dict[str, Any]]) -> dict[str, Any]:
    """Run ``action``; whatever happens, the harvester ends ready and its session ended."""
    harvester = _harvester(session, harvester_id)
    run = session.get(HarvestingSession, run_id) if run_id else None
    if run is not None:
        run.status, run.started = "on-going", utcnow()
        session.commit()
    try:
        output = action(harvester, run)
        status = "finished"
    except RemoteUnavailable as exc:
        session.rollback()
        harvester.remote_available = False
        harvester.last_check_harvestable_resources_message = f"Remote unavailable: {exc.message}"
        output, status = {"remote_available": False, "message": exc.message}, "failed"
    except Exception as exc:
        session.rollback()
        message = exc.message if isinstance(exc, CartothecaError) else f"{type(exc).__name__}: {exc}"
        _end(session, harvester, run, "failed", message)
        raise
    _end(session, harvester, run, output.pop("status", status), output.get("message", ""))
    return output


def _end(session: Session, harvester: Harvester, run: HarvestingSession | None, status: str,
         message: str) -> None:
    harvester.status = READY
    harvester.last_updated = utcnow()
    if run is not None:
        run.status, run.ended = status, utcnow()
        run.session_details = (message or "")[:4000]
    session.commit()


# -- check availability ----------------------------------------------------------------------


def check_availability(session: Session, settings: Settings, harvester_id: int) -> dict[str, Any]:
    def action(harvester: Harvester, _run) -> dict[str, Any]:
        kind = registry.harvester_type(harvester.harvester_type, harvester.remote_url,
                                       harvester.harvester_type_specific_configuration)
        try:
            available, message = kind.check_availability(RemoteClient(settings)), ""
        except REMOTE_ERRORS as exc:
            available, message = False, exc.message
        harvester.remote_available = bool(available)
        harvester.last_checked_availability = utcnow()
        return {"remote_available": harvester.remote_available, "message": message}

    return _guarded(session, harvester_id, None, action)


# -- refresh the harvestable list ------------------------------------------------------------


def refresh(session: Session, settings: Settings, harvester_id: int, run_id: int | None,
            progress: Progress | None = None) -> dict[str, Any]:
    def action(harvester: Harvester, run: HarvestingSession | None) -> dict[str, Any]:
        remotes = _listed(settings, harvester)
        if progress:
            progress("update harvestable resources")
        counts = sync_list(session, settings, harvester, remotes, run)
        return {"message": _summary(counts), **counts}

    return _guarded(session, harvester_id, run_id, action)


def sync_list(session: Session, settings: Settings, harvester: Harvester,
              remotes: Sequence[RemoteResource], run: HarvestingSession | None) -> dict[str, int]:
    """Bring the harvestable rows in line with what the remote listed; rows gone from the
    remote are dropped, with their local copies when the harvester deletes orphans."""
    harvester.remote_available = True
    rows = {r.unique_identifier: r for r in session.scalars(
        select(HarvestableResource).where(HarvestableResource.harvester_id == harvester.id))}
    if run is not None:
        run.total_records_to_process, run.records_done = len(remotes), 0
    added = 0
    for number, remote in enumerate(remotes, start=1):
        row = rows.pop(remote.unique_identifier, None)
        if row is None:
            added += 1
            row = HarvestableResource(harvester_id=harvester.id,
                                      unique_identifier=remote.unique_identifier,
                                      should_be_harvested=harvester.harvest_new_resources_by_default,
                                      status=READY, last_harvesting_message="")
            session.add(row)
        row.title = remote.title[:255]
        row.remote_resource_type = remote.resource_type[:64]
        row.remote_last_updated = remote.last_updated
        row.remote_data = remote.to_json()
        row.content_hash = remote.content_hash
        row.last_updated = utcnow()
        if run is not None:
            run.records_done = number
        if number % COMMIT_EVERY == 0:
            session.commit()
    orphans = list(rows.values())
    removed = delete_orphans(session, settings, harvester, orphans)
    harvester.last_checked_harvestable_resources = utcnow()
    harvester.last_check_harvestable_resources_message = _summary(
        {"listed": len(remotes), "added": added, "orphans": len(orphans), "deleted": removed})
    session.commit()
    return {"listed": len(remotes), "added": added, "orphans": len(orphans), "deleted": removed}


def delete_orphans(session: Session, settings: Settings, harvester: Harvester,
                   orphans: Sequence[HarvestableResource]) -> int:
    """Forget resources the remote no longer offers; their local copies go too only when the
    harvester says so (``delete_orphan_resources_automatically``)."""
    ids = [r.resource_id for r in orphans if r.resource_id is not None]
    deleted = 0
    if ids and harvester.delete_orphan_resources_automatically:
        documents.forget_files(session, settings, ids)
        deleted = session.execute(delete(Resource).where(Resource.id.in_(ids))).rowcount or 0
    for row in orphans:
        session.delete(row)
    session.flush()
    return deleted


def _summary(counts: dict[str, int]) -> str:
    return (f"{counts['listed']} harvestable resources listed, {counts['added']} new, "
            f"{counts['orphans']} no longer offered, {counts['deleted']} local copies deleted")


# -- harvest ---------------------------------------------------------------------------------


def harvest(session: Session, settings: Settings, harvester_id: int, run_id: int | None,
            progress: Progress | None = None) -> dict[str, Any]:
    """List the remote again (so changes are seen), then create or update the local copy of
    every resource to be harvested whose remote metadata changed since it was last harvested."""

    def action(harvester: Harvester, run: HarvestingSession | None) -> dict[str, Any]:
        remotes = _listed(settings, harvester)
        sync_list(session, settings, harvester, remotes, None)
        selected = session.scalars(select(HarvestableResource).where(
            HarvestableResource.harvester_id == harvester.id,
            HarvestableResource.should_be_harvested.is_(True)).order_by(HarvestableResource.id)).all()
        if run is not None:
            run.total_records_to_process, run.records_done = len(selected), 0
        session.commit()
        principal = local.owner_principal(session, settings, harvester)
        counts = {"created": 0, "updated": 0, "unchanged": 0, "failed": 0}
        for row in selected:
            if _aborting(session, harvester.id):
                return {"status": "aborted", "message": "aborted", **counts}
            if progress:
                progress(f"harvest {row.unique_identifier}")
            counts[_harvest_one(session, settings, principal, harvester, row)] += 1
            if run is not None:
                run.records_done += 1
            session.commit()
        message = (f"{counts['created']} created, {counts['updated']} updated, "
                   f"{counts['unchanged']} unchanged, {counts['failed']} failed")
        return {"message": message, **counts}

    return _guarded(session, harvester_id, run_id, action)


def _aborting(session: Session, harvester_id: int) -> bool:
    return session.scalar(select(Harvester.status).where(Harvester.id == harvester_id)) in ABORTS


def _harvest_one(session: Session, settings: Settings, principal, harvester: Harvester,
                 row: HarvestableResource) -> str:
    exists = row.resource_id is not None and session.scalar(
        select(Resource.id).where(Resource.id == row.resource_id)) is not None
    if exists and row.harvested_hash == row.content_hash:
        return "unchanged"
    try:
        resource = local.save(session, settings, principal, harvester,
                              RemoteResource.from_json(row.remote_data),
                              row.resource_id if exists else None)
    except CartothecaError as exc:
        # Earlier records are committed; only this one's changes are undone.
        session.rollback()
        row.status, row.last_harvesting_message = "failed", exc.message[:4000]
        return "failed"
    row.resource_id, row.harvested_hash = resource.id, row.content_hash
    row.status, row.last_harvesting_message, row.last_harvested = READY, "", utcnow()
    return "updated" if exists else "created"
