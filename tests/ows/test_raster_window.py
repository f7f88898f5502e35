"""The windows mapnik draws rasters of the object store from: for COGs of every kind (grey with
nodata, RGB, paletted, with a mask, floating point; with and without overviews) and views from
the whole raster down to a few pixels, reprojected or not, mapnik draws the VRT over the windows
exactly as it draws the COG itself."""

from __future__ import annotations

from pathlib import Path

import mapnik
import numpy as np
import pytest
import rasterio
from rasterio.enums import ColorInterp
from rasterio.transform import from_bounds

from cartotheca.geodata.storage.cog import COGStore
from cartotheca.ows import raster_window
from tests.geodata.fixtures import write_raster

BOUNDS = (0.0, 40.0, 16.0, 52.0)
BUFFER = 32
VIEWS = {  # name: (bbox, srs, width, height)
    "whole": ((-2.0, 38.0, 18.0, 54.0), "epsg:4326", 120, 90),
    "half": ((4.0, 44.0, 12.0, 50.0), "epsg:4326", 300, 220),
    "close": ((3.1, 43.2, 3.6, 43.5), "epsg:4326", 256, 256),
    "edge": ((15.0, 51.0, 17.0, 53.0), "epsg:4326", 64, 64),
    "outside": ((30.0, 10.0, 40.0, 20.0), "epsg:4326", 64, 64),
    "mercator": ((-300000.0, 4800000.0, 1900000.0, 7000000.0), "epsg:3857", 100, 100),
    "mercator tile": ((0.0, 5009377.0, 1252344.0, 6261721.0), "epsg:3857", 256, 256),
}


def map_xml(file: str, srs: str) -> str:
    return (f'<Map srs="{srs}" buffer-size="{BUFFER}">'
            '<Style name="r"><Rule><RasterSymbolizer/></Rule></Style>'
            f'<Layer name="r" srs="epsg:4326"><StyleName>r</StyleName><Datasource>'
            f'<Parameter name="type">gdal</Parameter><Parameter name="file">{file}</Parameter>'
            "</Datasource></Layer></Map>")


def draw(file: str, bbox: tuple[float, ...], srs: str, width: int, height: int) -> np.ndarray:
    m = mapnik.Map(width, height)
    mapnik.load_map_from_string(m, map_xml(file, srs), False, "")
    m.aspect_fix_mode = mapnik.aspect_fix_mode.RESPECT  # as the map server draws: the box as asked
    m.zoom_to_box(mapnik.Box2d(*bbox))
    image = mapnik.Image(width, height)
    mapnik.render(m, image)
    return np.frombuffer(image.to_string(), dtype=np.uint8).reshape(height, width, 4)


def source(folder: Path, kind: str, size: tuple[int, int]) -> Path:
    width, height = size
    if kind == "grey with nodata":
        return write_raster(folder, "grey", width=width, height=height, bounds=BOUNDS, nodata=7)
    if kind == "rgb":
        return write_raster(folder, "rgb", width=width, height=height, bounds=BOUNDS, bands=3)
    if kind == "float":
        return write_raster(folder, "float", width=width, height=height, bounds=BOUNDS, dtype="float32")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{kind.replace(' ', '_')}.tif"
    rows, cols = np.indices((height, width))
    data = ((rows // 5 + cols // 7) % 4).astype("uint8")
    profile = {"driver": "GTiff", "width": width, "height": height, "count": 1, "dtype": "uint8",
               "crs": "EPSG:4326", "transform": from_bounds(*BOUNDS, width, height)}
    with rasterio.Env(GDAL_TIFF_INTERNAL_MASK=True), rasterio.open(path, "w", **profile) as dst:
        dst.write(data, 1)
        if kind == "paletted":
            dst.colorinterp = [ColorInterp.palette]
            dst.write_colormap(1, {0: (200, 30, 30, 255), 1: (30, 200, 30, 255), 2: (30, 30, 200, 255),
                                   3: (240, 240, 20, 128)})
        else:  # a mask: a diagonal half of the raster is no data
            dst.write_mask(np.where(rows * width > cols * height, 255, 0).astype("uint8"))
    return path


@pytest.mark.parametrize("size", [(64, 48), (1400, 1050)], ids=["small", "with overviews"])
@pytest.mark.parametrize("kind", ["grey with nodata", "rgb", "paletted", "masked", "float"])
def test_the_window_draws_as_the_cog(tmp_path, kind, size):
    store = COGStore.in_folder(tmp_path / "cog")
    cog = store.path(store.write_cog(str(source(tmp_path / "source", kind, size)), "raster"))
    drawn_any = False
    for name, (bbox, srs, width, height) in VIEWS.items():
        expected = draw(cog, bbox, srs, width, height)
        vrt = raster_window.write_window(cog, tmp_path / "windows" / name.replace(" ", "_"), bbox, srs,
                                         width, height, BUFFER)
        assert np.array_equal(draw(vrt, bbox, srs, width, height), expected), name
        drawn_any = drawn_any or bool(expected[..., 3].any())
    assert drawn_any


def test_levels_cover_what_mapnik_can_ask_for():
    factors = [1, 2, 4, 8]
    assert raster_window._levels(factors, 0.5) == [0]  # zoomed in: full resolution only
    assert raster_window._levels(factors, 5.0) == [0, 1, 2]  # 5/3 → full; 5*1.3 → level 2 (4)
    assert raster_window._levels(factors, 30.0) == [3]  # every level finer than 30/3 is out
