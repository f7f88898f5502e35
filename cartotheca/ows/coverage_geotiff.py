"""cartotheca.ows.coverage_geotiff: the pixels of a planned coverage cut, written as a GeoTIFF.

An unscaled subset in the native CRS is read straight from the COG, so its pixels are exactly
the source's; everything else goes through a ``WarpedVRT`` onto the output grid. Output is
written in strips to a temporary GeoTIFF, so memory stays bounded whatever the size.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

import numpy as np
import rasterio
from rasterio.enums import Resampling
from rasterio.vrt import WarpedVRT
from rasterio.windows import Window

from cartotheca.ows.coverage import Grid, OutputGrid

STRIP_ROWS = 1024


def write_geotiff(path: str, grid: Grid, out: OutputGrid) -> str:
    """Cut ``out`` from the COG at ``path`` into a temporary GeoTIFF; returns its path (the
    caller deletes it)."""
    fd, target = tempfile.mkstemp(suffix=".tif", prefix="coverage-")
    os.close(fd)
    try:
        with rasterio.open(path) as src:
            source = src if out.window is not None else WarpedVRT(
                src, crs=out.crs.rasterio, transform=out.transform, width=out.width, height=out.height,
                resampling=Resampling[out.resampling])
            with source, rasterio.open(target, "w", **_profile(grid, out)) as dst:
                for row in range(0, out.height, STRIP_ROWS):
                    rows = min(STRIP_ROWS, out.height - row)
                    if out.window is not None:
                        read = Window(out.window.col_off, out.window.row_off + row, out.width, rows)
                    else:
                        read = Window(0, row, out.width, rows)
                    dst.write(source.read(out.indexes, window=read), window=Window(0, row, out.width, rows))
                _describe(src, dst, grid, out)
    except BaseException:
        os.unlink(target)
        raise
    return target


def _profile(grid: Grid, out: OutputGrid) -> dict[str, Any]:
    profile: dict[str, Any] = {
        "driver": "GTiff", "width": out.width, "height": out.height, "count": len(out.indexes),
        "dtype": grid.dtypes[out.indexes[0] - 1], "crs": out.crs.rasterio, "transform": out.transform,
        "compress": "deflate", "BIGTIFF": "IF_SAFER",
    }
    if grid.nodata is not None:
        profile["nodata"] = grid.nodata
    if out.width >= 512 and out.height >= 512:
        profile.update(tiled=True, blockxsize=256, blockysize=256)
    if np.dtype(profile["dtype"]).kind == "f":
        profile["predictor"] = 3
    elif np.dtype(profile["dtype"]).itemsize > 1:
        profile["predictor"] = 2
    return profile


def _describe(src: Any, dst: Any, grid: Grid, out: OutputGrid) -> None:
    """Band names, colour interpretation and palette travel with the pixels."""
    for position, index in enumerate(out.indexes, start=1):
        dst.set_band_description(position, grid.band_names[index - 1])
    try:
        dst.colorinterp = [src.colorinterp[i - 1] for i in out.indexes]
    except Exception:  # GTiff refuses some combinations (e.g. palette on RGB); keep its defaults
        pass
    if len(out.indexes) == 1:
        try:
            dst.write_colormap(1, src.colormap(out.indexes[0]))
        except ValueError:
            pass
