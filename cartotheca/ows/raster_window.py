"""cartotheca.ows.raster_window: the part of a COG in the object store that one map needs, as
local files for mapnik.

mapnik's wheel bundles a GDAL built without curl, so mapnik cannot open ``/vsis3/`` names;
rasterio's GDAL can. For a map with a raster kept in the object store, rasterio reads the view's
window (plus mapnik's buffer and a margin) of each level of the COG mapnik's read may pick, and
writes each to a temporary GeoTIFF. mapnik opens a VRT with the COG's exact size,
georeferencing, bands, nodata, colours, mask and overview levels whose sources are those windows:
mapnik computes the same read as on the COG itself, GDAL picks the same level and finds the
same pixels, so the map is the one a local COG gives. Levels no read of this view can pick are
declared without data; the files are removed after the render, and no node keeps a copy.
"""

from __future__ import annotations

import math
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import rasterio
from lxml import etree
from rasterio.crs import CRS
from rasterio.enums import ColorInterp, MaskFlags
from rasterio.errors import CRSError
from rasterio.warp import transform_bounds
from rasterio.windows import Window, from_bounds

from cartotheca.geodata.storage.stores import raster_store
from cartotheca.settings import Settings

# Source pixels per map pixel mapnik may ask for, at most: its filter factor (2 for bilinear
# scaling, 3 for the larger kernels); and how far GDAL may go past the asked resolution when it
# picks an overview.
OVERSAMPLE = 3
TOLERANCE = 1.3
GDAL_TYPES = {"uint8": "Byte", "int8": "Int8", "uint16": "UInt16", "int16": "Int16", "uint32": "UInt32",
              "int32": "Int32", "uint64": "UInt64", "int64": "Int64", "float32": "Float32",
              "float64": "Float64"}
MARGIN = 0.05  # of the window's size on each side: mapnik's own reprojection of the view box


def needs_windows(settings: Settings, datasets: Sequence[Any]) -> bool:
    """True when a raster of ``datasets`` is in a store mapnik cannot open."""
    return any(d.storage == "cog" for d in datasets) and not raster_store(settings).is_local


@contextmanager
def local_windows(settings: Settings, datasets: Sequence[Any], bbox: tuple[float, float, float, float],
                  srs: str, width: int, height: int, buffer_pixels: int) -> Iterator[dict[int, str]]:
    """Temporary VRTs of the rasters of ``datasets`` over the view, by position in the list;
    removed when the block ends."""
    store = raster_store(settings)
    folder = Path(tempfile.mkdtemp(prefix="map-rasters-"))
    try:
        files: dict[int, str] = {}
        for index, dataset in enumerate(datasets):
            if dataset.storage != "cog":
                continue
            with store.reading(dataset.location) as path:
                files[index] = write_window(path, folder / str(index), bbox, srs, width, height,
                                            buffer_pixels)
        yield files
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def write_window(path: str, folder: Path, bbox: tuple[float, float, float, float], srs: str,
                 width: int, height: int, buffer_pixels: int) -> str:
    """The VRT standing for the COG at ``path`` over the view, written in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    with rasterio.open(path) as src:
        box = _native_box(src, bbox, srs, width, height, buffer_pixels)
        factors = [1, *src.overviews(1)]
        wanted = _levels(factors, _source_pixels_per_map_pixel(src, box, width, height))
        sizes = [(src.width, src.height)] + [(-(-src.width // f), -(-src.height // f)) for f in factors[1:]]
        placed: dict[int, tuple[str, Window]] = {}
        for level in wanted:
            with (rasterio.open(path, overview_level=level - 1) if level else nullcontext(src)) as grid:
                sizes[level] = (grid.width, grid.height)
                window = _window(grid, box)
                target = str(folder / f"level{level}.tif")
                _write_tif(src, grid, window, target)
                placed[level] = (target, window)
        last = max(wanted)  # coarser levels than any read of this view picks are left out
        masked = src.mask_flag_enums[0] == [MaskFlags.per_dataset]
        overviews, mask_overviews = [], []
        for level in range(1, last + 1):
            name = str(folder / f"level{level}.vrt")
            _write_vrt(src, sizes[level], placed.get(level), [], name)
            overviews.append(name)
            if masked:  # the mask's levels, read by GDAL for the mask as the data's are for it
                name = str(folder / f"level{level}.mask.vrt")
                _write_mask_vrt(sizes[level], placed.get(level), name)
                mask_overviews.append(name)
        name = str(folder / "raster.vrt")
        _write_vrt(src, sizes[0], placed.get(0), overviews, name, georeferenced=True,
                   mask_overviews=mask_overviews if masked else None)
    return name


def _source_pixels_per_map_pixel(src: Any, box: tuple[float, float, float, float], width: int,
                                 height: int) -> float:
    return min((box[2] - box[0]) / width / abs(src.res[0]), (box[3] - box[1]) / height / abs(src.res[1]))


def _levels(factors: list[int], ratio: float) -> list[int]:
    """The levels (0: full resolution) a read of this view may use: mapnik asks for one to
    ``OVERSAMPLE`` source pixels per map pixel, and GDAL takes the coarsest level at or under
    the asked resolution (with some tolerance)."""
    finest = max([i for i, f in enumerate(factors) if f <= ratio / OVERSAMPLE] or [0])
    coarsest = max([i for i, f in enumerate(factors) if f <= ratio * TOLERANCE] or [0])
    return list(range(finest, max(finest, coarsest) + 1))


def _write_tif(src: Any, grid: Any, window: Window, target: str) -> None:
    profile: dict[str, Any] = {
        "driver": "GTiff", "width": window.width, "height": window.height, "count": src.count,
        "dtype": src.dtypes[0], "crs": src.crs, "transform": grid.window_transform(window),
        "BIGTIFF": "IF_SAFER"}
    with rasterio.Env(GDAL_TIFF_INTERNAL_MASK=True), rasterio.open(target, "w", **profile) as dst:
        dst.write(grid.read(window=window))
        if src.mask_flag_enums[0] == [MaskFlags.per_dataset]:
            dst.write_mask(grid.read_masks(1, window=window))


def _write_vrt(src: Any, size: tuple[int, int], placed: tuple[str, Window] | None, overviews: list[str],
               target: str, georeferenced: bool = False, mask_overviews: list[str] | None = None) -> None:
    root = etree.Element("VRTDataset", rasterXSize=str(size[0]), rasterYSize=str(size[1]))
    if georeferenced:
        etree.SubElement(root, "SRS").text = src.crs.to_wkt()
        etree.SubElement(root, "GeoTransform").text = ", ".join(repr(v) for v in src.transform.to_gdal())
    for band in range(1, src.count + 1):
        element = etree.SubElement(root, "VRTRasterBand", dataType=GDAL_TYPES[src.dtypes[band - 1]],
                                   band=str(band))
        if src.nodata is not None:
            etree.SubElement(element, "NoDataValue").text = repr(float(src.nodata))
        interp = src.colorinterp[band - 1]
        etree.SubElement(element, "ColorInterp").text = interp.name.capitalize()
        if interp == ColorInterp.palette:
            colours = src.colormap(band)
            table = etree.SubElement(element, "ColorTable")
            for index in range(max(colours) + 1):
                r, g, b, a = colours.get(index, (0, 0, 0, 0))
                etree.SubElement(table, "Entry", c1=str(r), c2=str(g), c3=str(b), c4=str(a))
        _fill_band(element, str(band), placed, overviews)
    if mask_overviews is not None:
        mask = etree.SubElement(etree.SubElement(root, "MaskBand"), "VRTRasterBand", dataType="Byte")
        _fill_band(mask, "mask,1", placed, mask_overviews)
    Path(target).write_bytes(etree.tostring(root))


def _write_mask_vrt(size: tuple[int, int], placed: tuple[str, Window] | None, target: str) -> None:
    """One level of the mask as a band of its own (an overview names a band by number)."""
    root = etree.Element("VRTDataset", rasterXSize=str(size[0]), rasterYSize=str(size[1]))
    _fill_band(etree.SubElement(root, "VRTRasterBand", dataType="Byte", band="1"), "mask,1", placed, [])
    Path(target).write_bytes(etree.tostring(root))


def _fill_band(element: Any, source_band: str, placed: tuple[str, Window] | None,
               overviews: list[str]) -> None:
    """A VRT band's overviews (band 1 of a mask level, else the same band) and its window."""
    for overview in overviews:
        item = etree.SubElement(element, "Overview")
        etree.SubElement(item, "SourceFilename", relativeToVRT="0").text = overview
        etree.SubElement(item, "SourceBand").text = "1" if source_band.startswith("mask") else source_band
    if placed is None:
        return
    file, window = placed
    source = etree.SubElement(element, "SimpleSource")
    etree.SubElement(source, "SourceFilename", relativeToVRT="0").text = file
    etree.SubElement(source, "SourceBand").text = source_band
    etree.SubElement(source, "SrcRect", xOff="0", yOff="0", xSize=str(window.width), ySize=str(window.height))
    etree.SubElement(source, "DstRect", xOff=str(window.col_off), yOff=str(window.row_off),
                     xSize=str(window.width), ySize=str(window.height))


def _native_box(src: Any, bbox: tuple[float, float, float, float], srs: str, width: int, height: int,
                buffer_pixels: int) -> tuple[float, float, float, float]:
    """The view plus mapnik's buffer, in the raster's CRS, widened by ``MARGIN``; the whole
    raster when the view cannot be carried over."""
    minx, miny, maxx, maxy = bbox
    pad_x = (maxx - minx) / width * (buffer_pixels + 1)
    pad_y = (maxy - miny) / height * (buffer_pixels + 1)
    view = (minx - pad_x, miny - pad_y, maxx + pad_x, maxy + pad_y)
    try:
        crs = CRS.from_user_input(srs.upper() if srs.lower().startswith("epsg:") else srs)
        box = transform_bounds(crs, src.crs, *view, densify_pts=21) if crs != src.crs else view
    except (CRSError, ValueError):
        return tuple(src.bounds)
    if not all(math.isfinite(v) for v in box) or box[2] <= box[0] or box[3] <= box[1]:
        return tuple(src.bounds)
    margin_x, margin_y = (box[2] - box[0]) * MARGIN, (box[3] - box[1]) * MARGIN
    return box[0] - margin_x, box[1] - margin_y, box[2] + margin_x, box[3] + margin_y


def _window(grid: Any, box: tuple[float, float, float, float]) -> Window:
    """``box`` as whole pixels of ``grid``, clipped to it; one corner pixel when they do not
    meet (mapnik then draws nothing of it)."""
    window = from_bounds(*box, transform=grid.transform)
    left, top = max(0, math.floor(window.col_off)), max(0, math.floor(window.row_off))
    right = min(grid.width, math.ceil(window.col_off + window.width))
    bottom = min(grid.height, math.ceil(window.row_off + window.height))
    if right <= left or bottom <= top:
        return Window(0, 0, 1, 1)
    return Window(left, top, right - left, bottom - top)
