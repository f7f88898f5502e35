"""GDAL's WFS driver (Debian gdal-bin: ``ogrinfo`` and ``ogr2ogr``) against a live server.

The commands run as users run them; what ``ogr2ogr`` copies is read back with pyogrio (another
GDAL) and compared with the published source.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import numpy as np
import pytest

from tests.factories import make_user
from tests.geodata.fixtures import POINTS, POLYGONS, publish_file, write_points, write_polygons
from tests.ows.wfs_fixtures import read_features

pytestmark = pytest.mark.clients
TIMEOUT = 120


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} (Debian gdal-bin) is not installed but CI requires it")
        pytest.skip(f"{name} (Debian gdal-bin) is not installed")
    return found


def _run(*args: str) -> subprocess.CompletedProcess:
    # No schema or capabilities caching between runs; one page size for the whole download
    env = {"GDAL_HTTP_TIMEOUT": "60", "OGR_WFS_LOAD_MULTIPLE_LAYER_DEFN": "NO", "CPL_DEBUG": "OFF",
           "PATH": "/usr/bin:/bin"}
    result = subprocess.run(list(args), capture_output=True, text=True, timeout=TIMEOUT, env=env)
    assert result.returncode == 0, f"{args}\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture
def published(db, settings, tmp_path):
    owner = make_user(db)
    points = publish_file(db, settings, owner, write_points(tmp_path), title="Observations")
    polygons = publish_file(db, settings, owner, write_polygons(tmp_path), title="Areas")
    return points, polygons


def test_ogrinfo_summarises_every_layer(live_server, published):
    points, polygons = published
    output = _run(_tool("ogrinfo"), "-ro", "-al", "-so", f"WFS:{live_server.url}ows").stdout
    blocks = {m.group(1): m.group(2) for m in
              re.finditer(r"Layer name: (\S+)\n(.*?)(?=\nLayer name: |\Z)", output, re.S)}
    assert set(blocks) == {points.alternate, polygons.alternate}
    assert "Feature Count: 10" in blocks[points.alternate]
    assert f"Feature Count: {len(POLYGONS)}" in blocks[polygons.alternate]
    assert re.search(r"Geometry: (3D )?Point", blocks[points.alternate])
    assert "name: String" in blocks[points.alternate]
    extent = re.search(r"Extent: \(([-\d.]+), ([-\d.]+)\) - \(([-\d.]+), ([-\d.]+)\)",
                       blocks[polygons.alternate])
    assert np.allclose([float(v) for v in extent.groups()], (0.0, 40.0, 20.0, 60.0))


@pytest.mark.parametrize("version", ["2.0.0", "1.1.0"])
def test_ogr2ogr_copies_features(live_server, published, tmp_path, version):
    points, _ = published
    out = tmp_path / f"copy-{version}.gpkg"
    _run(_tool("ogr2ogr"), "-f", "GPKG", str(out), f"WFS:{live_server.url}ows?VERSION={version}",
         points.alternate, "-nln", "copied")
    read = read_features(out, layer="copied")
    order = np.argsort(read["id"])
    assert [read["name"][i] for i in order] == [p["name"] for p in POINTS]
    coords = np.array([[read["geometries"][i].x, read["geometries"][i].y] for i in order])
    assert np.allclose(coords, [[p["lon"], p["lat"]] for p in POINTS])


def test_ogr2ogr_with_an_attribute_filter_sent_to_the_server(live_server, published, tmp_path):
    points, _ = published
    out = tmp_path / "filtered.gpkg"
    _run(_tool("ogr2ogr"), "-f", "GPKG", str(out), f"WFS:{live_server.url}ows", points.alternate,
         "-where", "category = 'b' AND value > 2", "-spat", "-7", "40", "10", "50", "-nln", "copied")
    read = read_features(out, layer="copied")
    assert sorted(int(v) for v in read["id"]) == [5, 8]
