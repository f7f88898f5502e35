"""cartotheca.catalogue.dataset_records: the catalogue rows of a stored dataset.

One resource (``dataset``, subtype vector/vector_time/raster), its ``datasets`` row saying where
the data lives, one attribute row per field with GeoNode's statistics, and a default style.
An overwrite keeps the resource (id, uuid, permissions) and replaces the rest.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from pyproj import CRS, Transformer
from sqlalchemy import select
from sqlalchemy.orm import Session

from cartotheca import xmlsafe
from cartotheca.catalogue import permission_specs, resource_lifecycle
from cartotheca.catalogue.auth import Principal
from cartotheca.catalogue.iso_metadata import apply_iso_metadata, read_iso
from cartotheca.catalogue.resource_writer import set_extent
from cartotheca.db.base import utcnow
from cartotheca.db.models import Dataset, DatasetAttribute, Resource, Style
from cartotheca.errors import InvalidInput
from cartotheca.geodata import stats
from cartotheca.geodata.ingest import IngestOptions, Source, Stored
from cartotheca.geodata.sources import RasterSource, VectorSource
from cartotheca.geodata.storage import stored_layer
from cartotheca.settings import Settings
from cartotheca.styling import sld as styling_sld
from cartotheca.styling.defaults import default_sld

log = logging.getLogger("cartotheca.ingest")


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


# -- checks of the options ----------------------------------------------------------------


def parse_permissions(session: Session, settings: Settings, body: Any) -> permission_specs.Spec | None:
    """The upload's ``permissions``: GeoNode's mapping form (what geonodectl sends) or the
    compact form of the permissions endpoint; validated against a dataset-shaped resource."""
    if body in (None, "", {}):
        return None
    if isinstance(body, (str, bytes)):
        try:
            body = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise InvalidInput("permissions: not valid JSON") from None
    probe = Resource(resource_type="dataset", subtype="vector", owner_id=None)
    if isinstance(body, Mapping) and any(isinstance(body.get(k), list) for k in
                                         ("users", "groups", "organizations")):
        return permission_specs.compact_spec(session, settings, probe,
                                             permission_specs.CompactSpec.model_validate(body))
    return permission_specs.named_spec(session, settings, probe,
                                       permission_specs.NamedSpec.model_validate(body))


def validate_sld(text: str) -> str:
    """The SLD checked as the map renderer will read it (``InvalidInput`` if it cannot be drawn)."""
    return styling_sld.validate_sld(text.encode("utf-8"))


def parse_metadata(text: str):
    """The ISO document, parsed safely and checked to be ISO 19115 before anything starts."""
    root = xmlsafe.parse(text, "xml_file")
    read_iso(root)
    return root


# -- rows ----------------------------------------------------------------------------------


def record(session: Session, settings: Settings, principal: Principal, item: Plan,
           options: IngestOptions) -> tuple[Resource, Stored | None]:
    """Add (or, for an overwrite, update) the rows of one stored dataset; returns the resource
    and the stored data it no longer uses (to drop once committed)."""
    old = None
    if item.replaces is not None:
        resource, dataset = item.replaces
        old = stored_of(dataset)
        if options.title:
            resource.title = item.title
    else:
        resource = resource_lifecycle.create_resource(session, principal, settings, {"title": item.title},
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
    return resource, old


def stored_of(dataset: Dataset) -> Stored:
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
        _describe_raster(resource, dataset, item)
    else:
        _describe_vector(resource, dataset, item)


def _describe_raster(resource: Resource, dataset: Dataset, item: Plan) -> None:
    resource.subtype = "raster"
    dataset.location, dataset.layer = item.stored.cog_location, item.name
    dataset.raster_info = dict(item.source.info)
    dataset.geometry_column = dataset.geometry_type = dataset.fid_column = None
    dataset.feature_count = None
    dataset.has_time, dataset.time_attribute = False, None


def _describe_vector(resource: Resource, dataset: Dataset, item: Plan) -> None:
    source, layer = item.source, item.stored.layer
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


def _as_datetime(value: Any) -> dt.datetime | None:
    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=None) if value.tzinfo is None else \
            value.astimezone(dt.UTC).replace(tzinfo=None)
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day)
    return None


def lonlat_bounds(bounds, crs_wkt: str) -> tuple[float, float, float, float]:
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
    return default_sld(item.name, kind, geometry_type, raster_info)


def _apply_metadata(session: Session, resource: Resource, text: str) -> None:
    root = parse_metadata(text)
    apply_iso_metadata(session, resource, root)
