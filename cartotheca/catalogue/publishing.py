"""cartotheca.catalogue.publishing: uploaded files become datasets (resource, dataset, attributes, style).

The order matters for crash safety: validate, write the data to the store, then add every
catalogue row at the end, in the caller's one transaction. Stored data lives exactly as long as
that transaction: a rollback drops it, and data a replaced dataset no longer uses is dropped
only after the commit. Names derived from ``key`` (the execution id) are the same on a retry,
so a retried ingest first removes what a killed attempt left.
"""

from __future__ import annotations

import logging
import shutil
import uuid as uuid_mod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import event, select
from sqlalchemy.orm import Session, selectinload

from cartotheca import xmlsafe
from cartotheca.catalogue import permission_specs
from cartotheca.catalogue import permissions as perms
from cartotheca.catalogue import resources as catalogue
from cartotheca.catalogue.auth import Principal
from cartotheca.catalogue.resources import set_extent
from cartotheca.db.base import utcnow
from cartotheca.db.models import Dataset, DatasetAttribute, Resource, Style
from cartotheca.errors import InvalidInput, NotFound, PermissionDenied
from cartotheca.geodata import ingest, stats
from cartotheca.geodata.ingest import IngestOptions, Source, Stored
from cartotheca.geodata.sources import RasterSource, VectorSource
from cartotheca.settings import Settings

log = logging.getLogger("cartotheca.ingest")
Progress = Callable[[str, float], None]
STORE_NAME_ROOM = 50  # store names get "_" + 12 key characters; PostgreSQL identifiers stop at 63


JOURNAL_NAME = "journal.jsonl"


class Journal:
    """What an import is about to write (store layers, thumbnails), one JSON line each, made
    durable before the write starts. A retried or abandoned import undoes it from here: a
    killed process leaves no other trace of data it had half written."""

    def __init__(self, path: Path | None):
        self.path = path

    def note(self, **entry: Any) -> None:
        if self.path is None:
            return
        import json
        import os

        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def entries(self) -> list[dict[str, Any]]:
        import json

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
                elif entry.get("what") == "thumbnail":
                    Path(entry["path"]).unlink(missing_ok=True)
            except Exception:
                log.exception("could not undo %s", entry)
        if self.path is not None:
            self.path.unlink(missing_ok=True)


def staging_root(settings: Settings) -> Path:
    return settings.DATA_DIR / "uploads"


def thumbnail_path(settings: Settings, resource_uuid: str) -> Path:
    return settings.DATA_DIR / "thumbnails" / f"{resource_uuid}.png"


# -- checks made before anything is stored --------------------------------------------------


def parse_permissions(session: Session, settings: Settings, body: Any) -> permission_specs.Spec | None:
    """The upload's ``permissions``: GeoNode's mapping form (what geonodectl sends) or the
    compact form of the permissions endpoint; validated against a dataset-shaped resource."""
    if body in (None, "", {}):
        return None
    if isinstance(body, (str, bytes)):
        import orjson

        try:
            body = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise InvalidInput("permissions: not valid JSON") from None
    probe = Resource(resource_type="dataset", subtype="vector", owner_id=None)
    if isinstance(body, Mapping) and any(isinstance(body.get(k), list) for k in
                                         ("users", "groups", "organizations")):
        return permission_specs.parse_compact(session, settings, probe, body)
    return permission_specs.parse_mapping(session, settings, probe, body)


def validate_sld(text: str) -> str:
    """The SLD checked by the map server's validator when present, else parsed safely."""
    try:
        from cartotheca.ows.styles import validate_sld as ows_validate
    except ImportError:
        root = xmlsafe.parse(text, "sld_file")
        if not root.tag.endswith("StyledLayerDescriptor"):
            raise InvalidInput("sld_file is not a Styled Layer Descriptor") from None
        return text
    return ows_validate(text.encode("utf-8"))


def parse_metadata(text: str):
    return xmlsafe.parse(text, "xml_file")


def check_options(session: Session, settings: Settings, options: IngestOptions) -> None:
    """Everything about the options that can be refused before the data is read."""
    parse_permissions(session, settings, options.permissions)
    if options.sld:
        validate_sld(options.sld)
    if options.xml:
        parse_metadata(options.xml)


# -- planning -------------------------------------------------------------------------------


@dataclass
class Plan:
    """One dataset to publish from one validated source."""

    source: Source
    index: int
    name: str
    title: str
    store_name: str
    resource_uuid: str
    replaces: tuple[Resource, Dataset] | None = None
    stored: Stored | None = None


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


def publish_files(session: Session, settings: Settings, principal: Principal,
                  files: Mapping[str, Path], options: IngestOptions, *, key: str | None = None,
                  workdir: Path | None = None, progress: Progress | None = None,
                  on_stored: Callable[[Callable[[], None]], None] | None = None,
                  journal: Journal | None = None) -> list[Resource]:
    """Validate, store and record the upload; returns the new (or replaced) resources.

    ``on_stored`` receives an undo action for each piece of stored data (the ingest job hands
    them to the engine's failure hooks); the session's rollback also undoes them. ``journal``
    notes each write before it starts; what an earlier attempt noted is undone first.
    """
    key = key or uuid_mod.uuid4().hex
    journal = journal or Journal(None)
    journal.undo(settings)
    workdir = workdir or staging_root(settings) / f"work-{key}"
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
        resources = [_record(session, settings, principal, item, options) for item in plans]
        session.flush()
        report("thumbnails", 90.0)
        for item, resource in zip(plans, resources, strict=True):
            _thumbnail(session, settings, resource, item, on_stored, journal)
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

    _on_rollback(session, undo)
    if on_stored is not None:
        on_stored(undo)


def _on_rollback(session: Session, action: Callable[[], None]) -> None:
    """Run ``action`` if the session's transaction rolls back; forget it once it commits."""

    def rolled_back(_session) -> None:
        event.remove(session, "after_commit", committed)
        try:
            action()
        except Exception:
            log.exception("undoing stored data after a rollback failed")

    def committed(_session) -> None:
        event.remove(session, "after_rollback", rolled_back)

    event.listen(session, "after_rollback", rolled_back, once=True)
    event.listen(session, "after_commit", committed, once=True)


def after_commit(session: Session, action: Callable[[], None]) -> None:
    def committed(_session) -> None:
        event.remove(session, "after_rollback", rolled_back)
        try:
            action()
        except Exception:
            log.exception("post-commit cleanup failed")

    def rolled_back(_session) -> None:
        event.remove(session, "after_commit", committed)

    event.listen(session, "after_commit", committed, once=True)
    event.listen(session, "after_rollback", rolled_back, once=True)


# -- records --------------------------------------------------------------------------------


def _record(session: Session, settings: Settings, principal: Principal, item: Plan,
            options: IngestOptions) -> Resource:
    if item.replaces is not None:
        resource, dataset = item.replaces
        old = stored_of(dataset)
        after_commit(session, lambda: ingest.discard(settings, old))
        if options.title:
            resource.title = item.title
    else:
        resource = catalogue.create_resource(session, principal, settings, {"title": item.title},
                                             resource_type="dataset", uuid=item.resource_uuid)
        dataset = Dataset(resource_id=resource.id, workspace=settings.DEFAULT_WORKSPACE,
                          name=item.name, store=item.name)
        session.add(dataset)
    _describe(resource, dataset, item, settings)
    _attributes(session, dataset, item)
    _style(session, settings, dataset, item, options)
    spec = parse_permissions(session, settings, options.permissions)
    if spec is not None:
        session.flush()  # the default grants must be rows before "replace" deletes them
        permission_specs.apply(session, resource, spec, "replace")
    if options.xml:
        _apply_metadata(session, resource, options.xml)
    return resource


def stored_of(dataset: Dataset) -> Stored:
    from cartotheca.geodata.storage import stored_layer

    if dataset.storage == "cog":
        return Stored("raster", cog_location=dataset.location)
    return Stored("vector", layer=stored_layer(dataset))


def _describe(resource: Resource, dataset: Dataset, item: Plan, settings: Settings) -> None:
    source, stored = item.source, item.stored
    assert stored is not None
    now = utcnow()
    srid = f"EPSG:{source.srid}" if source.srid else "EPSG:4326"
    bounds = source.bounds
    if stored.layer is not None and stored.layer.bounds is not None:
        bounds = tuple(stored.layer.bounds)
    set_extent(resource, bounds, srid, lonlat_bounds(bounds, source.crs_wkt))
    resource.name = item.name
    resource.alternate = f"{dataset.workspace}:{item.name}"
    resource.state = "PROCESSED"
    resource.sourcetype = "LOCAL"
    resource.date = resource.date or now
    resource.last_updated = now
    dataset.storage = stored.storage
    dataset.native_crs = source.crs_wkt
    dataset.native_srid = source.srid
    dataset.source_files = [{"name": source.candidate.stem, "slug": source.candidate.path.name,
                             "file": source.candidate.path.name}]
    dataset.ptype = "gxp_wmscsource"
    if isinstance(source, RasterSource):
        resource.subtype = "raster"
        dataset.location, dataset.layer = stored.cog_location, item.name
        dataset.raster_info = dict(source.info)
        dataset.geometry_column = dataset.geometry_type = dataset.fid_column = None
        dataset.feature_count = None
        dataset.has_time, dataset.time_attribute = False, None
        return
    layer = stored.layer
    assert layer is not None and isinstance(source, VectorSource)
    resource.subtype = "vector_time" if source.time_attribute else "vector"
    dataset.location, dataset.layer = layer.location, layer.layer
    dataset.geometry_column, dataset.fid_column = layer.geometry_column, layer.fid_column
    dataset.geometry_type = layer.geometry_type or source.geometry_type
    dataset.feature_count = layer.feature_count
    dataset.native_srid = layer.srid if layer.srid is not None else source.srid
    dataset.charset = source.charset.upper() if source.charset == "utf-8" else source.charset
    dataset.raster_info = None
    dataset.has_time = bool(source.time_attribute)
    dataset.time_attribute = _stored_field_name(layer, source.time_attribute)
    if source.time_extent:
        start, end = source.time_extent
        resource.temporal_extent_start, resource.temporal_extent_end = _as_datetime(start), _as_datetime(end)


def _as_datetime(value: Any):
    import datetime as dt

    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=None) if value.tzinfo is None else \
            value.astimezone(dt.UTC).replace(tzinfo=None)
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day)
    return None


def lonlat_bounds(bounds, crs_wkt: str) -> tuple[float, float, float, float]:
    from pyproj import CRS, Transformer

    crs = CRS.from_user_input(crs_wkt)
    if crs.to_epsg() == 4326:
        return tuple(float(v) for v in bounds)
    transformer = Transformer.from_crs(crs, "EPSG:4326", always_xy=True)
    minx, miny, maxx, maxy = transformer.transform_bounds(*bounds, densify_pts=21)
    return (max(minx, -180.0), max(miny, -90.0), min(maxx, 180.0), min(maxy, 90.0))


def _stored_field_name(layer, name: str | None) -> str | None:
    if name is None:
        return None
    for info in layer.fields:
        if info.name == name:
            return info.name
    for info in layer.fields:
        if info.name.lower() == name.lower():
            return info.name
    return name


def _attributes(session: Session, dataset: Dataset, item: Plan) -> None:
    source = item.source
    if dataset.resource_id is not None and item.replaces is not None:
        session.execute(DatasetAttribute.__table__.delete().where(
            DatasetAttribute.dataset_id == dataset.resource_id))
    now = utcnow()
    if isinstance(source, RasterSource):
        names = source.info.get("band_descriptions") or []
        rows = [DatasetAttribute(dataset_id=dataset.resource_id, attribute=name,
                                 attribute_type="xsd:double", display_order=i + 1,
                                 last_stats_updated=now, **stats.empty())
                for i, name in enumerate(names)]
    else:
        layer = item.stored.layer
        source_fields = {f.name.lower(): f for f in source.fields}
        rows = []
        for order, info in enumerate(layer.fields or source.fields, start=1):
            origin = source_fields.get(info.name.lower())
            column = source.values.get(origin.name) if origin is not None else None
            figures = stats.attribute_stats(info.name, info.type, column)
            rows.append(DatasetAttribute(dataset_id=dataset.resource_id, attribute=info.name,
                                         attribute_type=info.type, display_order=order,
                                         last_stats_updated=now, **figures))
        rows.insert(0, DatasetAttribute(
            dataset_id=dataset.resource_id, attribute=layer.geometry_column,
            attribute_type=f"gml:{layer.geometry_type or source.geometry_type}PropertyType",
            display_order=0, last_stats_updated=now, **stats.empty()))
    session.add_all(rows)


def _style(session: Session, settings: Settings, dataset: Dataset, item: Plan,
           options: IngestOptions) -> None:
    existing = None
    if item.replaces is not None:
        existing = session.scalar(select(Style).where(Style.dataset_id == dataset.resource_id,
                                                      Style.is_default.is_(True)))
        if existing is not None and not options.sld:
            return
    body = validate_sld(options.sld) if options.sld else default_style(item)
    if existing is not None:
        existing.sld_body = body
        return
    session.add(Style(dataset_id=dataset.resource_id, name=item.name, workspace=dataset.workspace,
                      sld_title=item.title, sld_body=body, is_default=True))


def default_style(item: Plan) -> str:
    source = item.source
    kind = "raster" if isinstance(source, RasterSource) else "vector"
    geometry_type = None if isinstance(source, RasterSource) else source.geometry_type
    raster_info = source.info if isinstance(source, RasterSource) else None
    try:
        from cartotheca.ows.styles import default_sld
    except ImportError:
        return minimal_sld(item.name, kind, geometry_type)
    return default_sld(item.name, kind, geometry_type, raster_info)


def minimal_sld(name: str, kind: str, geometry_type: str | None) -> str:
    """A plain SLD 1.0 style, used until the map server's style module provides its own."""
    if kind == "raster":
        symbolizer = "<RasterSymbolizer><Opacity>1.0</Opacity></RasterSymbolizer>"
    elif geometry_type and "Point" in geometry_type:
        symbolizer = ("<PointSymbolizer><Graphic><Mark><WellKnownName>circle</WellKnownName><Fill>"
                      '<CssParameter name="fill">#3366cc</CssParameter></Fill></Mark>'
                      "<Size>8</Size></Graphic></PointSymbolizer>")
    elif geometry_type and "LineString" in geometry_type:
        symbolizer = ('<LineSymbolizer><Stroke><CssParameter name="stroke">#3366cc</CssParameter>'
                      '<CssParameter name="stroke-width">1.5</CssParameter></Stroke></LineSymbolizer>')
    else:
        symbolizer = ('<PolygonSymbolizer><Fill><CssParameter name="fill">#aaccee</CssParameter>'
                      '</Fill><Stroke><CssParameter name="stroke">#3366cc</CssParameter></Stroke>'
                      "</PolygonSymbolizer>")
    return ('<?xml version="1.0" encoding="UTF-8"?><StyledLayerDescriptor version="1.0.0" '
            'xmlns="http://www.opengis.net/sld" xmlns:ogc="http://www.opengis.net/ogc">'
            f"<NamedLayer><Name>{name}</Name><UserStyle><Name>{name}</Name><Title>{name}</Title>"
            f"<FeatureTypeStyle><Rule>{symbolizer}</Rule></FeatureTypeStyle></UserStyle>"
            "</NamedLayer></StyledLayerDescriptor>")


def _apply_metadata(session: Session, resource: Resource, text: str) -> None:
    root = parse_metadata(text)
    try:
        from cartotheca.catalogue.iso_metadata import apply_iso_metadata
    except ImportError:
        log.warning("ISO metadata of %s not applied: cartotheca.catalogue.iso_metadata is missing",
                    resource.uuid)
        return
    apply_iso_metadata(session, resource, root)


def _thumbnail(session: Session, settings: Settings, resource: Resource, item: Plan,
               on_stored: Callable[[Callable[[], None]], None] | None, journal: Journal) -> None:
    """A thumbnail is welcome but never worth failing an upload for."""
    path = thumbnail_path(settings, resource.uuid)
    replacing = item.replaces is not None
    if not replacing:
        journal.note(what="thumbnail", path=str(path))
    try:
        from cartotheca.ows.render import render_thumbnail

        dataset = session.scalar(select(Dataset).where(Dataset.resource_id == resource.id)
                                 .options(selectinload(Dataset.styles)))
        width, height = settings.THUMBNAIL_SIZE[:2]
        png = render_thumbnail(settings, resource, dataset, width, height)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(png)
    except Exception:
        log.warning("no thumbnail for %s", resource.uuid, exc_info=True)
        return

    if not replacing:  # a replaced dataset's thumbnail is simply redrawn

        def undo() -> None:
            path.unlink(missing_ok=True)

        _on_rollback(session, undo)
        if on_stored is not None:
            on_stored(undo)
    resource.thumbnail_url = f"{settings.SITEURL}thumbnails/{resource.uuid}.png"
