"""OWSLib's WebFeatureService (1.1.0 and 2.0.0) against a live Cartotheca server.

Datasets are published through the real ingest into the database and data directory the live
server shares; features OWSLib fetches are read back with GDAL and compared with the source.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from owslib.wfs import WebFeatureService

from tests.factories import make_user
from tests.geodata.fixtures import POINTS, POLYGONS, publish_file, write_points, write_polygons
from tests.ows.wfs_fixtures import gml_features, positions, property_values, read_features

pytestmark = pytest.mark.clients


class _Body:
    """What ``property_values``/``gml_features`` need from a response."""

    def __init__(self, content: bytes):
        self.content = content


@pytest.fixture
def published(db, settings, tmp_path):
    owner = make_user(db)
    points = publish_file(db, settings, owner, write_points(tmp_path), title="Observations")
    polygons = publish_file(db, settings, owner, write_polygons(tmp_path), title="Areas")
    return points, polygons


@pytest.mark.parametrize("version", ["1.1.0", "2.0.0"])
def test_owslib_reads_capabilities_and_schema(live_server, published, version):
    points, polygons = published
    service = WebFeatureService(f"{live_server.url}ows", version=version, timeout=30)
    assert set(service.contents) == {points.alternate, polygons.alternate}
    layer = service.contents[polygons.alternate]
    assert layer.title == "Areas"
    assert np.allclose(layer.boundingBoxWGS84, (0.0, 40.0, 20.0, 60.0))
    assert any(crs.getcode() == "EPSG:4326" for crs in layer.crsOptions)
    assert {op.name for op in service.operations} >= {"GetCapabilities", "DescribeFeatureType", "GetFeature"}
    schema = service.get_schema(points.alternate)
    assert schema["geometry"] == "Point"
    assert {"id", "name", "value", "category"} <= set(schema["properties"])


@pytest.mark.parametrize("version", ["1.1.0", "2.0.0"])
def test_owslib_get_feature_with_bbox_and_paging(live_server, published, tmp_path, version):
    points, _ = published
    service = WebFeatureService(f"{live_server.url}ows", version=version, timeout=30)
    everything = service.getfeature(typename=[points.alternate]).read()
    gml = "3.2" if version == "2.0.0" else "3.1.1"
    features = gml_features(_Body(everything), gml)
    assert [int(v) for v in property_values(features, "id")] == [p["id"] for p in POINTS]
    # urn (lat/lon) coordinates for EPSG:4326 in both versions' default CRS names
    assert positions(features[1]).tolist() == [[POINTS[1]["lat"], POINTS[1]["lon"]]]
    path = tmp_path / "answer.gml"
    path.write_bytes(everything)
    read = read_features(path)
    assert read["name"] == [p["name"] for p in POINTS]
    coords = sorted((round(g.x, 6), round(g.y, 6)) for g in read["geometries"])
    assert coords == sorted((p["lon"], p["lat"]) for p in POINTS)
    # OWSLib writes the box in the layer CRS's axis order and names the CRS
    boxed = service.getfeature(typename=[points.alternate], bbox=(-9.0, 41.0, 0.0, 44.5),
                               srsname="urn:ogc:def:crs:EPSG::4326").read()
    assert sorted(int(v) for v in property_values(gml_features(_Body(boxed), gml), "id")) == [2, 3, 4, 5]
    page = service.getfeature(typename=[points.alternate], maxfeatures=3,
                              **({"startindex": 3} if version == "2.0.0" else {})).read()
    ids = [int(v) for v in property_values(gml_features(_Body(page), gml), "id")]
    assert ids == ([4, 5, 6] if version == "2.0.0" else [1, 2, 3])


def test_owslib_get_feature_as_geojson(live_server, published):
    _, polygons = published
    service = WebFeatureService(f"{live_server.url}ows", version="2.0.0", timeout=30)
    body = json.loads(service.getfeature(typename=[polygons.alternate],
                                         outputFormat="application/json").read())
    assert body["numberMatched"] == len(POLYGONS)
    assert sorted(f["properties"]["name"] for f in body["features"]) == sorted(p["name"] for p in POLYGONS)
