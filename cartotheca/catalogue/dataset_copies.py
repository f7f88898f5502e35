"""cartotheca.catalogue.dataset_copies: a copied dataset gets data, records and a style of its own.

GeoNode's copy of a dataset is a new, independent layer: its data is copied to a new table
named ``<name>_<md5(name + "_" + execution id)>`` (the importer's ``create_alternate``), and the
new resource has that name, the alternate ``<workspace>:<name>``, the source's attributes and
default style. Here the store copies the data (GeoPackage file, PostGIS table or COG) and the
rows follow, in the caller's transaction: a rollback drops the copied data, as it does for an
ingest (``db.session.on_rollback``), and the execution's failure hooks drop it too.
"""

from __future__ import annotations

import copy as copy_mod
import hashlib
import logging
import uuid as uuid_mod
from collections.abc import Callable

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from cartotheca.catalogue import publishing, thumbnails
from cartotheca.catalogue.dataset_records import stored_of
from cartotheca.db.models import Dataset, DatasetAttribute, Resource, Style
from cartotheca.db.session import on_rollback
from cartotheca.errors import StoreUnavailable
from cartotheca.filestore.stores import file_store
from cartotheca.geodata import ingest
from cartotheca.geodata.ingest import Stored
from cartotheca.geodata.storage import StoredLayer
from cartotheca.geodata.storage.stores import raster_store, vector_store
from cartotheca.settings import Settings

log = logging.getLogger("cartotheca.copy")
PG_IDENTIFIER_MAX = 63  # GeoNode keeps layer names within PostgreSQL's identifier length
# Columns of the source's rows that a copy does not take over (its own keys and names).
OWN_DATASET_COLUMNS = {"resource_id", "name", "store", "location", "layer"}
OWN_ATTRIBUTE_COLUMNS = {"id", "dataset_id"}

OnStored = Callable[[Callable[[], None]], None]


def copy_name(name: str, key: str) -> str:
    """The copy's layer name as GeoNode's importer makes it: the source's name, then the md5 of
    the name and the execution id, cut to fit a PostgreSQL identifier."""
    digest = hashlib.md5(f"{name}_{key}".encode()).hexdigest()  # noqa: S324 - a name, not security
    named = f"{name}_{digest}"
    return named if len(named) <= PG_IDENTIFIER_MAX else f"{name[:50]}{digest[:12]}"


def copy_dataset(session: Session, settings: Settings, source: Resource, clone: Resource, *,
                 key: str | None = None, on_stored: OnStored | None = None) -> Dataset | None:
    """Give ``clone`` (the new resource of a copy, already flushed) a copy of ``source``'s data
    and its dataset rows; None when the source has no stored data (a metadata-only record).

    ``key`` (the execution id) makes the names the same on a retry, so what a killed attempt
    stored under them is removed first. ``on_stored`` receives the action that drops the copied
    data (the copy job hands it to the engine's failure hooks).
    """
    original = session.scalar(select(Dataset).where(Dataset.resource_id == source.id)
                              .options(selectinload(Dataset.attributes), selectinload(Dataset.styles)))
    if original is None:
        return None
    keyed = key is not None  # names a retry of the same execution repeats
    key = (key or uuid_mod.uuid4().hex).replace("-", "")
    name = _free_name(session, original.workspace, copy_name(original.name, key))
    store_name = f"{original.name[:publishing.STORE_NAME_ROOM].rstrip('_')}_{key[:12]}"
    if keyed:
        _remove_leftovers(settings, original.storage, store_name)
    stored = copy_data(settings, stored_of(original), store_name)
    _on_undo(session, on_stored, lambda: ingest.discard(settings, stored))
    dataset = _dataset_row(original, clone, name, stored)
    session.add(dataset)
    _describe(clone, dataset, stored)
    session.flush()
    session.add_all(_attributes(original, dataset))
    session.add_all(_default_style(original, dataset))
    _copy_thumbnail(session, settings, source, clone, on_stored)
    session.flush()
    return dataset


def copy_data(settings: Settings, stored: Stored, store_name: str) -> Stored:
    """Copy stored data under ``store_name`` in the store that holds it (a copy never moves
    between backends: a PostGIS table is copied inside its datastore)."""
    if stored.layer is None:
        location = raster_store(settings).copy_cog(stored.cog_location or "", store_name)
        return Stored("raster", cog_location=location)
    store = vector_store(settings, stored.layer.storage)
    return Stored("vector", layer=store.copy(stored.layer, store_name))


def _remove_leftovers(settings: Settings, storage: str, store_name: str) -> None:
    """Drop what a killed attempt stored under ``store_name``, its hidden temporary file too
    (``discard_named`` knows those of the configured stores)."""
    if storage in ("cog", settings.STORAGE_BACKEND):
        ingest.discard_named(settings, "raster" if storage == "cog" else "vector", store_name)
    else:
        ingest.discard(settings, _named(storage, store_name))


def _named(storage: str, store_name: str) -> Stored:
    """What a copy under ``store_name`` in ``storage`` would have stored, to remove it by name."""
    if storage == "cog":
        return Stored("raster", cog_location=f"{store_name}.tif")
    location = f"{store_name}.gpkg" if storage == "geopackage" else f"public.{store_name}"
    return Stored("vector", layer=StoredLayer(
        storage=storage, location=location, layer=store_name, geometry_column="geom", fid_column="fid",
        geometry_type="Unknown", srid=None, crs_wkt="", feature_count=0, bounds=None, fields=[]))


def _on_undo(session: Session, on_stored: OnStored | None, action: Callable[[], None]) -> None:
    on_rollback(session, action, failure=publishing.UNDO_FAILED)
    if on_stored is not None:
        on_stored(action)


def _free_name(session: Session, workspace: str, name: str) -> str:
    """``name``, or ``name`` with a counter when a dataset or style of the workspace has it."""
    candidate, n = name, 0
    while _taken(session, workspace, candidate):
        n += 1
        suffix = f"_{n}"
        candidate = name[:PG_IDENTIFIER_MAX - len(suffix)] + suffix
    return candidate


def _taken(session: Session, workspace: str, name: str) -> bool:
    dataset = select(Dataset.resource_id).where(Dataset.workspace == workspace, Dataset.name == name)
    style = select(Style.id).where(Style.workspace == workspace, Style.name == name)
    return session.scalar(dataset) is not None or session.scalar(style) is not None


def _dataset_row(original: Dataset, clone: Resource, name: str, stored: Stored) -> Dataset:
    values = {column.key: copy_mod.deepcopy(getattr(original, column.key))
              for column in Dataset.__table__.columns if column.key not in OWN_DATASET_COLUMNS}
    if stored.layer is not None:
        layer = stored.layer
        values.update(location=layer.location, layer=layer.layer, feature_count=layer.feature_count)
    else:
        values.update(location=stored.cog_location, layer=name)
    return Dataset(resource_id=clone.id, name=name, store=name, **values)


def _describe(clone: Resource, dataset: Dataset, stored: Stored) -> None:
    clone.name = dataset.name
    clone.alternate = f"{dataset.workspace}:{dataset.name}"
    clone.state = "PROCESSED"
    if stored.layer is not None:
        dataset.feature_count = stored.layer.feature_count


def _attributes(original: Dataset, dataset: Dataset) -> list[DatasetAttribute]:
    return [DatasetAttribute(dataset_id=dataset.resource_id,
                             **{column.key: getattr(attribute, column.key)
                                for column in DatasetAttribute.__table__.columns
                                if column.key not in OWN_ATTRIBUTE_COLUMNS})
            for attribute in original.attributes]


def _default_style(original: Dataset, dataset: Dataset) -> list[Style]:
    """The source's default style (its first when none is marked), named after the copy as a
    dataset's default style is; none when the source draws with the generated default."""
    styles = sorted(original.styles, key=lambda s: (not s.is_default, s.id))
    if not styles:
        return []
    style = styles[0]
    return [Style(dataset_id=dataset.resource_id, name=dataset.name, workspace=dataset.workspace,
                  sld_title=style.sld_title, sld_body=style.sld_body, is_default=True)]


def _copy_thumbnail(session: Session, settings: Settings, source: Resource, clone: Resource,
                    on_stored: OnStored | None) -> None:
    """The source's own thumbnail file becomes the copy's; another URL is kept as it is. A
    thumbnail is never worth failing the copy for."""
    if not thumbnails.is_own_url(settings, source.thumbnail_url, source.uuid):
        return
    clone.thumbnail_url = None
    files = file_store(settings)
    target = thumbnails.thumbnail_key(clone.uuid)
    try:
        png = files.read_bytes(thumbnails.thumbnail_key(source.uuid))
        if png is None:
            raise FileNotFoundError(source.uuid)
        files.put_bytes(target, png)
    except (OSError, StoreUnavailable):
        log.warning("the thumbnail of %s was not copied", source.uuid, exc_info=True)
        return
    _on_undo(session, on_stored, lambda: files.delete(target))
    clone.thumbnail_url = thumbnails.thumbnail_url(settings, clone.uuid)

