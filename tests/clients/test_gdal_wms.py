"""GDAL's WMS driver (Debian gdal-bin's ``gdalinfo``/``gdal_translate``) against a live server."""

from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest
import rasterio

import cartotheca  # noqa: F401  (PROJ_DATA before rasterio)
from tests.factories import make_user
from tests.geodata.fixtures import polygons_sld, publish_file, write_polygons

# Outside CI a machine without gdal-bin skips these; CI installs it and must run them.
pytestmark = pytest.mark.skipif(shutil.which("gdal_translate") is None and not os.environ.get("CI"),
                                reason="gdal-bin is not installed")


@pytest.fixture
def polygons(db, settings, tmp_path):
    owner = make_user(db)
    return publish_file(db, settings, owner, write_polygons(tmp_path), title="Polygons", sld=polygons_sld())


def _run(*args: str) -> str:
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_gdalinfo_lists_the_layer_from_capabilities(live_server, polygons):
    out = _run("gdalinfo", f"WMS:{live_server.url}ows?SERVICE=WMS&REQUEST=GetCapabilities")
    assert f"LAYERS={polygons.alternate}" in out.replace("%3A", ":")


@pytest.mark.parametrize("version, crs_key, bbox", [
    ("1.1.1", "SRS", "0,40,40,60"),
    ("1.3.0", "CRS", "40,0,60,40"),
])
def test_gdal_translate_reads_the_map(live_server, polygons, tmp_path, version, crs_key, bbox):
    source = (f"WMS:{live_server.url}ows?SERVICE=WMS&VERSION={version}&REQUEST=GetMap"
              f"&LAYERS={polygons.alternate}&STYLES=&{crs_key}=EPSG:4326&BBOX={bbox}&FORMAT=image/png")
    out = tmp_path / f"map-{version}.tif"
    _run("gdal_translate", "-q", "-of", "GTiff", "-outsize", "200", "100", "-projwin", "0", "60", "40", "40",
         source, str(out))
    with rasterio.open(out) as dataset:
        assert dataset.crs.to_epsg() == 4326
        assert dataset.bounds.left == pytest.approx(0, abs=0.5)
        assert dataset.bounds.top == pytest.approx(60, abs=0.5)
        pixels = np.moveaxis(dataset.read(), 0, -1)
    assert tuple(pixels[25, 25][:3]) == (255, 0, 0)  # north-west: red
    assert tuple(pixels[25, 75][:3]) == (0, 255, 0)  # north-east: green
    assert tuple(pixels[75, 75][:3]) == (255, 255, 0)  # south-east: yellow
