"""cartotheca.geodata.storage.cog: rasters as Cloud-Optimized GeoTIFFs in a file store.

GDAL's COG driver (rasterio's copy) tiles the image in 512-pixel blocks, compresses it without
loss (DEFLATE with a predictor) and adds overviews. Pixel values stay those of the source; only
the overviews are resampled (nearest for paletted or categorical-looking data, average else).

The COGs are objects of a file store: files under ``RASTER_DIR/cog`` on the embedded default,
objects under ``rasters/`` of the bucket with ``OBJECT_STORE_URL``, which GDAL reads in place
(``/vsis3/``, only the blocks a read needs). Readers open a COG inside ``reading``: GDAL is told
how to reach the store there, and a failed read of an object store that is down is a
``StoreUnavailable`` (503), never a bare GDAL error.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import rasterio
import rasterio.shutil
from rasterio.enums import ColorInterp
from rasterio.errors import RasterioError
from rasterio.session import AWSSession

from cartotheca.errors import Conflict, InvalidInput, NotFound
from cartotheca.filestore import FileStore
from cartotheca.filestore.local import LocalFileStore
from cartotheca.geodata.storage._files import publish, remove
from cartotheca.geodata.storage._source import check_name

LOCATION_PATTERN = re.compile(r"[a-z][a-z0-9_]{0,62}\.tif")
# GDAL's credentials go through rasterio's AWS session (rasterio refuses them as plain options)
SESSION_OPTIONS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_S3_ENDPOINT")


def gdal_environment(config: dict[str, str]) -> Callable[[], AbstractContextManager[Any]]:
    """A factory of rasterio environments with a file store's GDAL options (none for a folder)."""
    if not config:
        return contextlib.nullcontext
    options = dict(config)
    given = {name: options.pop(name, None) for name in SESSION_OPTIONS}
    session = AWSSession(aws_access_key_id=given["AWS_ACCESS_KEY_ID"],
                         aws_secret_access_key=given["AWS_SECRET_ACCESS_KEY"],
                         region_name=given["AWS_REGION"], endpoint_url=given["AWS_S3_ENDPOINT"])
    return lambda: rasterio.Env(session=session, **options)


class COGStore:
    """COGs under ``prefix`` in ``files``. ``root`` is the folder that holds them when the
    store is a local folder (written there under a temporary name, then linked into place);
    None for an object store (written to a scratch file, then uploaded)."""

    def __init__(self, files: FileStore, prefix: str = "", *, root: Path | None = None):
        self.files = files
        self.prefix = prefix
        self.root = None if root is None else Path(root)
        self._environment = gdal_environment(files.gdal_config())

    @classmethod
    def in_folder(cls, root: Path) -> COGStore:
        return cls(LocalFileStore(Path(root)), root=Path(root))

    @property
    def is_local(self) -> bool:
        return self.root is not None

    def key(self, location: str) -> str:
        if not LOCATION_PATTERN.fullmatch(location or ""):
            raise InvalidInput(f"invalid raster location {location!r}")
        return self.prefix + location

    def path(self, location: str) -> str:
        """The name GDAL opens the COG by (inside ``reading`` for an object store)."""
        return self.files.gdal_path(self.key(location))

    @contextlib.contextmanager
    def reading(self, location: str) -> Iterator[str]:
        """The COG's GDAL name, for reads made inside the block. When a read fails and the
        object store is down, ``StoreUnavailable``; when the object is gone, ``NotFound``."""
        key = self.key(location)
        try:
            with self._environment():
                yield self.files.gdal_path(key)
        except RasterioError:
            if not self.is_local and self.files.stat(key) is None:
                raise NotFound("The dataset's raster is missing") from None
            raise

    def version(self, location: str) -> tuple:
        """What changes when the COG is written again (for ETags and reader caches)."""
        key = self.key(location)
        if self.root is not None:
            try:
                st = os.stat(self.root / location)
            except OSError:
                raise NotFound("The dataset's raster file is missing") from None
            return st.st_mtime_ns, st.st_size, st.st_ino
        info = self.files.stat(key)
        if info is None:
            raise NotFound("The dataset's raster is missing")
        return info.etag, info.size

    def open_bytes(self, location: str) -> tuple[Iterator[bytes], int]:
        """The stored GeoTIFF's bytes, in chunks, and their count."""
        key = self.key(location)
        info = self.files.stat(key)
        if info is None:
            raise NotFound("The dataset's raster is missing")
        return self.files.open_range(key), info.size

    def write_cog(self, source_path: str, name: str) -> str:
        name = check_name(name)
        location = f"{name}.tif"
        key = self.key(location)
        with self._scratch() as folder:
            if self.files.stat(key) is not None:
                raise Conflict(f"a raster named {name} already exists")
            temporary = folder / f".{name}.{uuid.uuid4().hex}.tmp.tif"
            try:
                _convert(source_path, temporary)
                self._publish(temporary, location)
            except (Conflict, InvalidInput):
                raise
            except RasterioError as exc:
                raise InvalidInput(
                    f"{Path(source_path).name} could not be converted to a COG: {exc}") from None
            finally:
                remove(temporary, ".aux.xml")
        return location

    def copy_cog(self, location: str, name: str) -> str:
        name = check_name(name)
        if self.files.stat(self.key(location)) is None:
            raise NotFound(f"the raster {location} is missing")
        copied = f"{name}.tif"
        if self.files.stat(self.key(copied)) is not None:
            raise Conflict(f"a raster named {name} already exists")
        with self._scratch() as folder:
            temporary = folder / f".{name}.{uuid.uuid4().hex}.tmp.tif"
            try:
                self.files.download(self.key(location), temporary)
                self._publish(temporary, copied)
            finally:
                remove(temporary)
        return copied

    def drop(self, location: str) -> None:
        if self.root is not None:
            remove(self.root / location, ".aux.xml", ".ovr")
        else:
            self.files.delete(self.key(location))

    @contextlib.contextmanager
    def _scratch(self) -> Iterator[Path]:
        """Where a COG is written before it is published: beside its final place in a folder
        (a rename publishes it), else a temporary folder of this machine, removed afterwards."""
        if self.root is not None:
            self.root.mkdir(parents=True, exist_ok=True)
            yield self.root
            return
        folder = Path(tempfile.mkdtemp(prefix="cog-"))
        try:
            yield folder
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _publish(self, temporary: Path, location: str) -> None:
        if self.root is not None:
            publish(temporary, self.root / location)
        else:
            self.files.put_file(self.key(location), temporary, move=True)


def _convert(source_path: str, target: Path) -> None:
    with rasterio.open(source_path) as src:
        paletted = ColorInterp.palette in src.colorinterp
        integer = all(dtype.startswith(("int", "uint")) for dtype in src.dtypes)
        # One integer band is usually classes (land cover ...): averaging would invent classes.
        classes = integer and src.count == 1 and src.dtypes[0] != "uint16"
        resampling = "NEAREST" if paletted or classes else "AVERAGE"
        floating = any(dtype.startswith("float") for dtype in src.dtypes)
        rasterio.shutil.copy(
            src, str(target), driver="COG", COMPRESS="DEFLATE",
            PREDICTOR="FLOATING_POINT" if floating else "YES", BLOCKSIZE=512,
            OVERVIEW_RESAMPLING=resampling, NUM_THREADS="ALL_CPUS", BIGTIFF="IF_SAFER",
        )
