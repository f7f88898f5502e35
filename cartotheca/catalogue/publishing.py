"""cartotheca.catalogue.publishing: uploaded files become published datasets.

The order matters for crash safety: validate, write the data to the store, then add every
catalogue row at the end, in the caller's one transaction. Stored data lives exactly as long as
that transaction: a rollback drops it, and data a replaced dataset no longer uses is dropped
only after the commit. Names derived from ``key`` (the execution id) are the same on a retry,
so a retried ingest first removes what a killed attempt left.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import uuid as uuid_mod
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from cartotheca import siteurl
from cartotheca.catalogue import dataset_records, events, thumbnails
from cartotheca.catalogue import permissions as perms
from cartotheca.catalogue.auth import Principal
from cartotheca.catalogue.dataset_records import Plan
from cartotheca.catalogue.kinds import ThumbnailDrawer
from cartotheca.db.models import Dataset, Resource
from cartotheca.db.session import on_commit, on_rollback
from cartotheca.errors import InvalidInput, NotFound, PermissionDenied
from cartotheca.filestore.stores import file_store
from cartotheca.geodata import ingest
from cartotheca.geodata.ingest import Dropped, IngestOptions, Source
from cartotheca.settings import Settings

log = logging.getLogger("cartotheca.ingest")
# What the log says when stored data made for a rolled-back transaction could not be removed.
UNDO_FAILED = "undoing stored data after a rollback failed"
Progress = Callable[[str, float], None]
STORE_NAME_ROOM = 50  # store names get "_" + 12 key characters; PostgreSQL identifiers stop at 63
JOURNAL_NAME = "journal.jsonl"


class Journal:
    """What an import is about to write (store layers, thumbnails), one JSON line each, made
    durable before the write starts. A retried or abandoned import undoes it from here: a
    killed process leaves no other trace of data it had half written. A file here;
    ``staging.StoredJournal`` keeps one in the object store, for imports on several machines."""

    def __init__(self, path: Path | None):
        self.path = path

    def note(self, **entry: Any) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def entries(self) -> list[dict[str, Any]]:
        if self.path is None or not self.path.exists():
            return []
        out = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # a line cut short by the kill: its write had not started
        return out

    def undo(self, settings: Settings) -> None:
        for entry in reversed(self.entries()):
            try:
                if entry.get("what") == "store":
                    ingest.discard_named(settings, entry["kind"], entry["name"])
                elif entry.get("what") == "thumbnail" and "key" in entry:
                    file_store(settings).delete(entry["key"])
                elif entry.get("what") == "thumbnail":  # a journal written before the file store
                    Path(entry["path"]).unlink(missing_ok=True)
            except Exception:
                log.exception("could not undo %s", entry)
        self.forget()

    def forget(self) -> None:
        if self.path is not None:
            self.path.unlink(missing_ok=True)


def staging_root(settings: Settings) -> Path:
    return settings.upload_dir


# -- checks made before anything is stored --------------------------------------------------


def check_options(session: Session, settings: Settings, options: IngestOptions) -> None:
    """Everything about the options that can be refused before the data is read."""
    dataset_records.parse_permissions(session, settings, options.permissions)
    if options.sld:
        dataset_records.validate_sld(options.sld)
    if options.xml:
        dataset_records.parse_metadata(options.xml)


# -- planning -------------------------------------------------------------------------------


def plan(session: Session, settings: Settings, principal: Principal, found: list[Source],
         options: IngestOptions, key: str) -> list[Plan]:
    workspace = settings.DEFAULT_WORKSPACE
    taken: set[str] = set()
    plans = []
    for index, source in enumerate(found):
        base = options.name if options.name and len(found) == 1 else source.name
        existing = _existing(session, principal, settings, base, options)
        if existing is not None and options.skip_existing and not options.overwrite:
            continue
        if existing is not None and options.overwrite:
            name = existing[1].name
        else:
            name = _unique_name(session, workspace, base, taken)
        taken.add(name)
        title = (options.title if options.title and len(found) == 1
                 else source.candidate.stem if len(found) == 1 else source.name)
        plans.append(Plan(
            source=source, index=index, name=name, title=title[:255],
            store_name=f"{name[:STORE_NAME_ROOM].rstrip('_')}_{key[:12]}",
            resource_uuid=str(uuid_mod.uuid5(uuid_mod.NAMESPACE_URL, f"cartotheca-ingest:{key}:{index}")),
            replaces=existing if options.overwrite else None,
        ))
    return plans


def _existing(session: Session, principal: Principal, settings: Settings, name: str,
              options: IngestOptions) -> tuple[Resource, Dataset] | None:
    """The dataset an overwrite replaces (``resource_pk``, else the same name)."""
    stmt = select(Resource, Dataset).join(Dataset, Dataset.resource_id == Resource.id)
    if options.overwrite and options.resource_pk is not None:
        row = session.execute(stmt.where(Resource.id == options.resource_pk)).first()
        if row is None:
            raise NotFound(f"resource_pk: no dataset with id {options.resource_pk}")
    else:
        row = session.execute(stmt.where(Dataset.workspace == settings.DEFAULT_WORKSPACE,
                                         Dataset.name == name)).first()
    if row is None:
        return None
    if options.overwrite and not perms.can(session, principal, row[0], perms.CHANGE_DATA):
        raise PermissionDenied(f"You may not replace the data of {row[1].name}")
    return row[0], row[1]


def _unique_name(session: Session, workspace: str, base: str, taken: set[str]) -> str:
    used = set(session.scalars(select(Dataset.name).where(
        Dataset.workspace == workspace, Dataset.name.startswith(base, autoescape=True))))
    used |= taken
    if base not in used:
        return base
    n = 1
    while f"{base}_{n}" in used:
        n += 1
    return f"{base}_{n}"


# -- the pipeline ---------------------------------------------------------------------------


def publish(session: Session, settings: Settings, principal: Principal, files: Mapping[str, Path],
            options: Mapping[str, Any], drawer: ThumbnailDrawer) -> Resource:
    """Validate, store and record ``files`` (the upload form's file fields → paths) as a new
    dataset owned by ``principal`` in one call (scripts, test fixtures); the caller commits.
    Returns the first dataset's resource.

    On failure nothing stays behind: stored data is dropped and the session is left as it was.
    """
    resources = publish_files(session, settings, principal, files, IngestOptions.from_mapping(options),
                              drawer=drawer)
    if not resources:
        raise InvalidInput("Every dataset of the upload was skipped (skip_existing_layers)")
    return resources[0]


def publish_files(session: Session, settings: Settings, principal: Principal,
                  files: Mapping[str, Path], options: IngestOptions, *, drawer: ThumbnailDrawer,
                  dropped: Dropped | None = None, key: str | None = None,
                  workdir: Path | None = None, progress: Progress | None = None,
                  on_stored: Callable[[Callable[[], None]], None] | None = None,
                  journal: Journal | None = None,
                  defer_thumbnail: Callable[[Resource], None] | None = None) -> list[Resource]:
    """Validate, store and record the upload; returns the new (or replaced) resources.

    ``drawer`` draws the thumbnails; ``dropped`` is told when a replaced dataset's data is
    dropped after the commit.
    ``defer_thumbnail``, when given, takes the thumbnail of each layer larger than
    THUMBNAIL_INLINE_MAX_FEATURES (the ingest job starts an execution that draws it); smaller
    layers, and every layer without it, get theirs here.

    ``on_stored`` receives an undo action for each piece of stored data (the ingest job hands
    them to the engine's failure hooks); the session's rollback also undoes them. ``journal``
    notes each write before it starts; what an earlier attempt noted is undone first.
    """
    key = key or uuid_mod.uuid4().hex
    journal = journal or Journal(None)
    journal.undo(settings)
    workdir = workdir or staging_root(settings) / f"work-{key}"
    # A retried import starts from a clean work folder: a killed attempt leaves its
    # unpacked archive and linked shapefile parts behind.
    shutil.rmtree(workdir, ignore_errors=True)
    report = progress or (lambda _step, _pct: None)
    try:
        report("validating", 10.0)
        check_options(session, settings, options)
        found = ingest.validate(ingest.gather(files, workdir, settings), options)
        plans = plan(session, settings, principal, found, options, key)
        report("storing", 40.0)
        for item in plans:
            _store(session, settings, item, on_stored, journal)
        report("publishing", 70.0)
        resources = []
        for item in plans:
            resource, replaced = dataset_records.record(session, settings, principal, item, options)
            if replaced is not None:
                on_commit(session, lambda old=replaced: ingest.discard(settings, old, dropped))
            resources.append(resource)
        session.flush()
        report("thumbnails", 90.0)
        for item, resource in zip(plans, resources, strict=True):
            if defer_thumbnail is not None and _is_large(session, settings, resource):
                defer_thumbnail(resource)
            else:
                _thumbnail(session, settings, drawer, resource, item, on_stored, journal)
            events.record(session, events.DATASET_PUBLISHED, resource=resource, actor=principal)
        return resources
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _store(session: Session, settings: Settings, item: Plan,
           on_stored: Callable[[Callable[[], None]], None] | None, journal: Journal) -> None:
    journal.note(what="store", kind=item.source.kind, name=item.store_name)
    item.stored = ingest.store(settings, item.source, item.store_name)
    stored = item.stored

    def undo() -> None:
        ingest.discard(settings, stored)

    on_rollback(session, undo, failure=UNDO_FAILED)
    if on_stored is not None:
        on_stored(undo)


def forget_data(session: Session, settings: Settings, resource_ids: Sequence[int],
                dropped: Dropped | None = None) -> None:
    """Resources are about to be deleted: the stored data of the datasets among them (GeoPackage
    file, PostGIS table or COG) is dropped once the deletion commits (``dropped`` is told); a
    rollback keeps it.

    Data that a dataset outside ``resource_ids`` still names is kept (a copy or an overwrite
    always stores data of its own, so this only guards against rows written by hand)."""
    ids = list(resource_ids)
    if not ids:
        return
    doomed = session.scalars(select(Dataset).where(Dataset.resource_id.in_(ids))
                             .order_by(Dataset.resource_id)).all()
    places = {(d.storage, d.location) for d in doomed}
    if not places:
        return
    kept = {(storage, location) for storage, location in session.execute(
        select(Dataset.storage, Dataset.location).where(
            Dataset.location.in_({location for _, location in places}),
            Dataset.resource_id.not_in(ids)))}
    drops = []
    for dataset in doomed:
        if (dataset.storage, dataset.location) in kept:
            log.info("the data of %s is kept: another dataset uses it", dataset.name)
            continue
        kept.add((dataset.storage, dataset.location))  # one drop per place
        drops.append((dataset.name, dataset_records.stored_of(dataset)))
    if drops:
        on_commit(session, lambda: _drop(settings, drops, dropped))


def _drop(settings: Settings, drops: list[tuple[str, ingest.Stored]], dropped: Dropped | None) -> None:
    """Missing data was already gone; anything else is logged: the deletion itself stands."""
    for name, stored in drops:
        try:
            ingest.discard(settings, stored, dropped)
        except Exception:
            log.exception("the stored data of the deleted dataset %s could not be dropped", name)


def _is_large(session: Session, settings: Settings, resource: Resource) -> bool:
    features = session.scalar(select(Dataset.feature_count).where(Dataset.resource_id == resource.id))
    return features is not None and features > settings.THUMBNAIL_INLINE_MAX_FEATURES


def _thumbnail(session: Session, settings: Settings, drawer: ThumbnailDrawer, resource: Resource,
               item: Plan, on_stored: Callable[[Callable[[], None]], None] | None,
               journal: Journal) -> None:
    """A thumbnail is welcome but never worth failing an upload for."""
    key = thumbnails.thumbnail_key(resource.uuid)
    files = file_store(settings)
    replacing = item.replaces is not None
    if not replacing:
        journal.note(what="thumbnail", key=key)
    try:
        png = drawer.dataset(session, settings, resource)
        if png is None:
            log.warning("no thumbnail for %s: it has no data", resource.uuid)
            return
        files.put_bytes(key, png)
    except Exception:
        log.warning("no thumbnail for %s", resource.uuid, exc_info=True)
        return

    if not replacing:  # a replaced dataset's thumbnail is simply redrawn

        def undo() -> None:
            files.delete(key)

        on_rollback(session, undo, failure=UNDO_FAILED)
        if on_stored is not None:
            on_stored(undo)
    resource.thumbnail_url = f"{siteurl.url(settings)}thumbnails/{resource.uuid}.png"
