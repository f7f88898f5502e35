"""cartotheca.geodata.ingest: uploaded files → validated sources → data written to the stores.

The steps are separate so the ingest job can report between them and undo what it did:
``gather`` (unpack, group shapefile parts), ``validate`` (sources.py), ``store`` / ``discard``.
Nothing here writes catalogue records: the catalogue calls these steps (``publishing``).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cartotheca import xmlsafe
from cartotheca.errors import InvalidInput
from cartotheca.geodata import archives, sources
from cartotheca.geodata.sources import Candidate, RasterSource, VectorSource
from cartotheca.geodata.storage import StoredLayer
from cartotheca.geodata.storage.stores import raster_store, vector_store
from cartotheca.settings import Settings

Source = VectorSource | RasterSource
# Told (storage, location) after stored data is dropped: the map server passes one that closes
# what it keeps open on that data (its pooled maps), so the space comes back at once.
Dropped = Callable[[str, str], None]
TRUE_WORDS = ("true", "1", "yes", "on")
FALSE_WORDS = ("false", "0", "no", "off", "")


def parse_bool(key: str, value: Any, default: bool = False) -> bool:
    """Form flags arrive as text (geonodectl sends Python's ``True``/``False``)."""
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in TRUE_WORDS:
        return True
    if text in FALSE_WORDS:
        return False
    raise InvalidInput(f"{key}: expected true or false, got {value!r}")


@dataclass
class IngestOptions:
    """The upload form's options, validated."""

    title: str | None = None
    name: str | None = None
    charset: str | None = None
    time: bool = False
    sld: str | None = None  # SLD text to use as the default style
    xml: str | None = None  # ISO 19115 metadata text
    permissions: Any = None  # perm spec (mapping or compact form)
    overwrite: bool = False
    resource_pk: int | None = None
    skip_existing: bool = False

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any]) -> IngestOptions:
        title = options.get("layer_title") or options.get("title")
        xmlsafe.check_text(title, "layer_title" if options.get("layer_title") else "title")
        pk = options.get("resource_pk")
        if pk not in (None, ""):
            try:
                pk = int(pk)
            except (TypeError, ValueError):
                raise InvalidInput("resource_pk: expected an integer") from None
        else:
            pk = None
        return cls(
            title=str(title).strip() or None if title else None,
            name=sources.sanitize_name(str(options["name"])) if options.get("name") else None,
            charset=sources.normalise_charset(options.get("charset")),
            time=parse_bool("time", options.get("time")),
            sld=_text(options.get("sld")),
            xml=_text(options.get("xml")),
            permissions=options.get("permissions"),
            overwrite=parse_bool("overwrite_existing_layer", options.get("overwrite_existing_layer",
                                                                         options.get("overwrite"))),
            resource_pk=pk,
            skip_existing=parse_bool("skip_existing_layers", options.get("skip_existing_layers")),
        )

    def as_input(self) -> dict[str, Any]:
        """JSON-safe form kept in the execution's input_params."""
        return {"title": self.title, "name": self.name, "charset": self.charset, "time": self.time,
                "overwrite_existing_layer": self.overwrite, "resource_pk": self.resource_pk,
                "skip_existing_layers": self.skip_existing, "permissions": self.permissions,
                "sld": self.sld, "xml": self.xml}


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, Path):
        return value.read_text(encoding="utf-8")
    if isinstance(value, bytes):
        return value.decode("utf-8")
    return str(value)


# -- gathering ------------------------------------------------------------------------------

PART_FIELDS = {"dbf_file": ".dbf", "shx_file": ".shx", "prj_file": ".prj", "cpg_file": ".cpg",
               "qix_file": ".qix", "sbn_file": ".sbn", "sbx_file": ".sbx"}
NOT_DATA_FIELDS = ("base_file", "xml_file", "sld_file", "zip_file")


def check_form(filenames: Mapping[str, str]) -> str:
    """Checks possible on the form alone (before any file is read): the kind of upload."""
    base = filenames.get("base_file")
    if not base:
        raise InvalidInput("base_file: this field is required.")
    kind = sources.kind_of(base)
    if kind is None:
        raise sources.unsupported(base)
    if base.lower().endswith(".shp"):
        for field, suffix in (("shx_file", ".shx"), ("dbf_file", ".dbf"), ("prj_file", ".prj")):
            if field not in filenames:
                raise InvalidInput(f"{field}: a shapefile upload needs its {suffix} part",
                                   code="invalid_shapefile")
    return kind


def gather(files: Mapping[str, Path], workdir: Path, settings: Settings) -> list[Candidate]:
    """The datasets in an upload: unpacked archives, shapefile parts brought together."""
    base = Path(files["base_file"])
    kind = check_form({k: Path(v).name for k, v in files.items()})
    if kind == "archive":
        limits = archives.ArchiveLimits.from_settings(settings)
        unpacked = archives.extract(base, workdir / "unpacked", limits)
        return sources.candidates_in(unpacked)
    if base.name.lower().endswith(".shp"):
        return [_shapefile(files, workdir)]
    if kind == "raster":
        return [Candidate("raster", base, base.stem)]
    return [Candidate("vector", base, base.stem, sources.VECTOR_DRIVERS[base.suffix.lower()])]


def _shapefile(files: Mapping[str, Path], workdir: Path) -> Candidate:
    """GDAL pairs shapefile parts by name: link each part under the base file's stem, whatever
    name it was uploaded with."""
    base = Path(files["base_file"])
    stem = base.name[: -len(".shp")]
    folder = workdir / "shapefile"
    folder.mkdir(parents=True, exist_ok=True)
    parts = [_link(base, folder / f"{stem}.shp")]
    for field, path in files.items():
        suffix = PART_FIELDS.get(field)
        if suffix is None and field.endswith("_file") and field not in NOT_DATA_FIELDS:
            suffix = "." + field[: -len("_file")]
        if suffix is not None:
            parts.append(_link(Path(path), folder / f"{stem}{suffix}"))
    return sources.shapefile_candidate(parts[0], parts[1:])


def _link(src: Path, dst: Path) -> Path:
    if dst.exists():
        dst.unlink()
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)
    return dst


def validate(candidates: list[Candidate], options: IngestOptions) -> list[Source]:
    found: list[Source] = []
    budget = sources.PreloadBudget()  # over the whole upload
    for candidate in candidates:
        if candidate.kind == "raster":
            if options.time:
                raise InvalidInput(f"{candidate.path.name}: time can only be enabled on vector data")
            found.append(sources.inspect_raster(candidate))
        else:
            found.extend(sources.inspect_vector(candidate, charset=options.charset, time=options.time,
                                                budget=budget))
    return found


# -- storing --------------------------------------------------------------------------------


@dataclass
class Stored:
    """Where one source's data went: a vector layer or a COG."""

    kind: str
    layer: StoredLayer | None = None
    cog_location: str | None = None

    @property
    def storage(self) -> str:
        return self.layer.storage if self.layer is not None else "cog"


def store(settings: Settings, source: Source, store_name: str) -> Stored:
    if isinstance(source, RasterSource):
        location = raster_store(settings).write_cog(str(source.candidate.path), store_name)
        return Stored("raster", cog_location=location)
    try:
        return Stored("vector", layer=vector_store(settings).write(source.source, store_name))
    finally:
        if source.source.preloaded is not None:
            source.source.preloaded.release()  # the stored copy is what is read from now on


def discard(settings: Settings, stored: Stored, dropped: Dropped | None = None) -> None:
    """Remove stored data (a failed or replaced publication); missing is not an error.
    ``dropped`` is told where the data was, once it is gone."""
    if stored.layer is not None:
        vector_store(settings, stored.layer.storage).drop(stored.layer)
        place = (stored.layer.storage, stored.layer.location)
    elif stored.cog_location:
        raster_store(settings).drop(stored.cog_location)
        place = ("cog", stored.cog_location)
    else:
        return
    if dropped is not None:
        dropped(*place)


def discard_named(settings: Settings, kind: str, store_name: str) -> None:
    """Drop whatever a store holds under ``store_name`` (an interrupted write included)."""
    if kind == "raster":
        store = raster_store(settings)
        store.drop(f"{store_name}.tif")
        _remove_temporaries(getattr(store, "root", None), store_name, "tif")
        return
    vector = vector_store(settings)
    vector.drop(_named_layer(settings, vector.name, store_name))
    if vector.name == "geopackage":
        _remove_temporaries(getattr(vector, "root", None), store_name, "gpkg")


def _remove_temporaries(root: Path | None, store_name: str, suffix: str) -> None:
    """File stores write to a hidden ``.<name>.<token>.tmp.<suffix>`` first; a write killed
    midway leaves it behind, and ``drop`` only knows the published file."""
    if root is None:
        return
    for leftover in Path(root).glob(f".{store_name}.*.tmp.{suffix}*"):
        leftover.unlink(missing_ok=True)


def _named_layer(settings: Settings, storage: str, store_name: str) -> StoredLayer:
    location = f"{store_name}.gpkg" if storage == "geopackage" else f"public.{store_name}"
    return StoredLayer(storage=storage, location=location, layer=store_name, geometry_column="geom",
                       fid_column="fid", geometry_type="Unknown", srid=None, crs_wkt="",
                       feature_count=0, bounds=None, fields=[])
