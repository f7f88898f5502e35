"""cartotheca.management.sync_datasets: re-read each dataset's stored data into its catalogue record.

The stored data is the truth: feature count, native and lon/lat extent and the attribute
statistics are recomputed from it, and the thumbnail is drawn again. Each dataset is one
transaction, so a dataset that fails (its data gone, say) is reported and the others go on.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pyarrow as pa
import rasterio
import shapely
from sqlalchemy import or_, select
from sqlalchemy.orm import selectinload

from cartotheca.catalogue.dataset_records import lonlat_bounds
from cartotheca.catalogue.resource_writer import set_extent
from cartotheca.catalogue.thumbnails import write_thumbnail
from cartotheca.db.base import utcnow
from cartotheca.db.models import Dataset, Resource
from cartotheca.errors import CartothecaError
from cartotheca.geodata import stats
from cartotheca.geodata.storage import FeatureQuery, stored_layer
from cartotheca.geodata.storage.stores import raster_store, vector_store
from cartotheca.management.registry import Command, CommandRun, Option, Stopped
from cartotheca.ows.thumbnails import dataset_png

log = logging.getLogger("cartotheca.management")


def sync_datasets(run: CommandRun, options: dict[str, Any]) -> None:
    rows = run.session.execute(_selected(options["filter"])).all()
    done = failed = 0
    for resource, dataset in rows:
        run.checkpoint(f"sync {resource.alternate}")
        try:
            summary = sync_dataset(run, resource, dataset, thumbnail=not options["skip_thumbnails"])
            run.session.commit()
        except Stopped:
            raise
        except Exception as exc:
            run.session.rollback()
            failed += 1
            reason = exc.message if isinstance(exc, CartothecaError) else f"{type(exc).__name__}: {exc}"
            log.warning("sync of %s failed", resource.alternate, exc_info=True)
            run.write(f"{resource.alternate}: failed: {reason}")
            continue
        done += 1
        run.write(f"{resource.alternate}: {summary}")
    run.write(f"Synchronised {done} dataset(s); {failed} failed.")


def _selected(names: list[str]):
    stmt = (select(Resource, Dataset).join(Dataset, Dataset.resource_id == Resource.id)
            .options(selectinload(Dataset.attributes), selectinload(Dataset.styles))
            .order_by(Resource.id))
    if names:
        stmt = stmt.where(or_(Resource.alternate.in_(names), Dataset.name.in_(names)))
    return stmt


def sync_dataset(run: CommandRun, resource: Resource, dataset: Dataset, *, thumbnail: bool) -> str:
    if dataset.storage == "cog":
        summary = _sync_raster(run, resource, dataset)
    else:
        summary = _sync_vector(run, resource, dataset)
    resource.last_updated = utcnow()
    if thumbnail:
        width, height = run.settings.THUMBNAIL_SIZE[:2]
        png = dataset_png(run.settings, resource, dataset, width, height)
        write_thumbnail(run.settings, resource, png)
        summary += ", thumbnail redrawn"
    return summary


def _sync_vector(run: CommandRun, resource: Resource, dataset: Dataset) -> str:
    store = vector_store(run.settings, dataset.storage)
    count = 0
    bounds: list[float] | None = None
    columns: dict[str, list[Any]] = {}
    for batch in store.iter_batches(stored_layer(dataset), FeatureQuery()):
        count += len(batch)
        geometries = np.asarray(batch.geometries, dtype=object)
        present = geometries[[g is not None for g in geometries]] if len(geometries) else geometries
        if len(present):
            box = shapely.total_bounds(present)
            if np.all(np.isfinite(box)):
                bounds = list(box) if bounds is None else [min(bounds[0], box[0]), min(bounds[1], box[1]),
                                                           max(bounds[2], box[2]), max(bounds[3], box[3])]
        for name, values in batch.properties.items():
            columns.setdefault(name, []).extend(values)
    dataset.feature_count = count
    if bounds is not None:
        _set_extent(resource, dataset, tuple(bounds))
    _update_statistics(dataset, columns)
    return f"{count} feature(s), extent {_extent_text(resource)}"


def _sync_raster(run: CommandRun, resource: Resource, dataset: Dataset) -> str:
    with raster_store(run.settings).reading(dataset.location) as path, rasterio.open(path) as src:
        bounds = tuple(src.bounds)
        info = dict(dataset.raster_info or {})
        info.update(width=src.width, height=src.height, count=src.count)
        dataset.raster_info = info
    _set_extent(resource, dataset, bounds)
    return f"{info['width']}x{info['height']} pixel(s), extent {_extent_text(resource)}"


def _set_extent(resource: Resource, dataset: Dataset, bounds: tuple) -> None:
    crs = dataset.native_crs or (f"EPSG:{dataset.native_srid}" if dataset.native_srid else "EPSG:4326")
    srid = resource.srid or (f"EPSG:{dataset.native_srid}" if dataset.native_srid else "EPSG:4326")
    set_extent(resource, tuple(float(v) for v in bounds), srid, lonlat_bounds(bounds, crs))


def _update_statistics(dataset: Dataset, columns: dict[str, list[Any]]) -> None:
    now = utcnow()
    for attribute in dataset.attributes:
        values = columns.get(attribute.attribute)
        if values is None:
            continue  # the geometry column, or a field the store no longer has
        try:
            column = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            column = pa.array([None if v is None else str(v) for v in values])
        figures = stats.attribute_stats(attribute.attribute, attribute.attribute_type, column)
        for key, value in figures.items():
            setattr(attribute, key, value)
        attribute.last_stats_updated = now


def _extent_text(resource: Resource) -> str:
    box = (resource.ll_minx, resource.ll_miny, resource.ll_maxx, resource.ll_maxy)
    return ",".join(f"{v:.6g}" for v in box) if None not in box else "none"


COMMAND = Command(
    name="sync_datasets",
    app_name="cartotheca.datasets",
    help="Re-read every dataset's stored data (or the named ones) and update its catalogue record: "
         "feature count, extent, attribute statistics and thumbnail.",
    run=sync_datasets,
    options=(
        Option(("-f", "--filter"), "filter", "only this dataset (name or workspace:name); repeatable",
               multiple=True, metavar="NAME"),
        Option(("--skip-thumbnails",), "skip_thumbnails", "keep the thumbnails as they are", flag=True),
    ),
)
