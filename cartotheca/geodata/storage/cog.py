"""cartotheca.geodata.storage.cog: rasters as Cloud-Optimized GeoTIFFs under ``raster_dir/cog``.

GDAL's COG driver (rasterio's copy) tiles the image in 512-pixel blocks, compresses it without
loss (DEFLATE with a predictor) and adds overviews. Pixel values stay those of the source; only
the overviews are resampled (nearest for paletted or categorical-looking data, average else).
"""

from __future__ import annotations

import re
import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import rasterio
import rasterio.shutil
from rasterio.enums import ColorInterp

from cartotheca.errors import Conflict, InvalidInput, NotFound
from cartotheca.geodata.storage._files import publish, remove
from cartotheca.geodata.storage._source import check_name

if TYPE_CHECKING:
    from cartotheca.settings import Settings

LOCATION_PATTERN = re.compile(r"[a-z][a-z0-9_]{0,62}\.tif")


class COGStore:
    def __init__(self, root: Path):
        self.root = Path(root)

    @classmethod
    def for_settings(cls, settings: Settings) -> COGStore:
        return cls(Path(settings.raster_dir) / "cog")

    def path(self, location: str) -> str:
        if not LOCATION_PATTERN.fullmatch(location or ""):
            raise InvalidInput(f"invalid raster location {location!r}")
        return str(self.root / location)

    def write_cog(self, source_path: str, name: str) -> str:
        name = check_name(name)
        location = f"{name}.tif"
        final = Path(self.path(location))
        self.root.mkdir(parents=True, exist_ok=True)
        if final.exists():
            raise Conflict(f"a raster named {name} already exists")
        temporary = self.root / f".{name}.{uuid.uuid4().hex}.tmp.tif"
        try:
            with rasterio.open(source_path) as src:
                paletted = ColorInterp.palette in src.colorinterp
                integer = all(dtype.startswith(("int", "uint")) for dtype in src.dtypes)
                # One integer band is usually classes (land cover ...): averaging would invent classes.
                classes = integer and src.count == 1 and src.dtypes[0] != "uint16"
                resampling = "NEAREST" if paletted or classes else "AVERAGE"
                floating = any(dtype.startswith("float") for dtype in src.dtypes)
                rasterio.shutil.copy(
                    src, str(temporary), driver="COG", COMPRESS="DEFLATE",
                    PREDICTOR="FLOATING_POINT" if floating else "YES", BLOCKSIZE=512,
                    OVERVIEW_RESAMPLING=resampling, NUM_THREADS="ALL_CPUS", BIGTIFF="IF_SAFER",
                )
            publish(temporary, final)
        except (Conflict, InvalidInput):
            raise
        except rasterio.errors.RasterioError as exc:
            raise InvalidInput(f"{Path(source_path).name} could not be converted to a COG: {exc}") from None
        finally:
            remove(temporary, ".aux.xml")
        return location

    def copy_cog(self, location: str, name: str) -> str:
        name = check_name(name)
        source = Path(self.path(location))
        if not source.is_file():
            raise NotFound(f"the raster {location} is missing")
        copied = f"{name}.tif"
        final = Path(self.path(copied))
        if final.exists():
            raise Conflict(f"a raster named {name} already exists")
        temporary = self.root / f".{name}.{uuid.uuid4().hex}.tmp.tif"
        try:
            shutil.copyfile(source, temporary)
            publish(temporary, final)
        finally:
            remove(temporary)
        return copied

    def drop(self, location: str) -> None:
        remove(Path(self.path(location)), ".aux.xml", ".ovr")
