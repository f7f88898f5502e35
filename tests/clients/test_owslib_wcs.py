"""OWSLib 0.35's WebCoverageService 2.0.1 against a live Cartotheca: capabilities, coverage
descriptions, and GetCoverage GeoTIFFs read back with rasterio, pixel for pixel."""

from __future__ import annotations

import numpy as np
import pytest
from owslib.util import ServiceException
from owslib.wcs import WebCoverageService
from requests import HTTPError

from tests.factories import make_user
from tests.geodata.fixtures import raster_pixels
from tests.ows.raster_fixtures import coverage_id, publish_polygons, publish_raster, read_geotiff

pytestmark = pytest.mark.clients


@pytest.fixture
def owner(db):
    return make_user(db)


@pytest.fixture
def coverages(db, settings, owner, tmp_path):
    """A single-band raster, a three-band one with nodata, and a vector dataset (no coverage)."""
    single = publish_raster(db, settings, owner, tmp_path, "elevation", title="Elevation")
    triple = publish_raster(db, settings, owner, tmp_path, "bands", title="Bands", bands=3, nodata=250)
    publish_polygons(db, settings, owner, tmp_path)
    return single, triple


@pytest.fixture
def service(live_server, coverages):
    return WebCoverageService(f"{live_server.url}ows", version="2.0.1")


def test_capabilities(service, coverages):
    single, triple = coverages
    assert service.version == "2.0.1"
    assert service.identification.type == "OGC WCS"
    assert set(service.contents) == {coverage_id(single), coverage_id(triple)}
    assert {op.name for op in service.operations} == {"GetCapabilities", "DescribeCoverage", "GetCoverage"}
    assert service.contents[coverage_id(single)].supportedFormats == ["image/tiff"]


def test_describe_coverage(service, coverages):
    single, _ = coverages
    content = service.contents[coverage_id(single)]
    grid = content.grid
    assert grid.dimension == 2 and grid.axislabels == ["i", "j"]
    assert grid.lowlimits == ["0", "0"] and grid.highlimits == ["63", "47"]
    assert [float(v) for v in grid.origin] == pytest.approx([51.875, 0.125])
    assert [[float(v) for v in vector] for vector in grid.offsetvectors] == [[0, 0.25], [-0.25, 0]]
    [box] = content.boundingboxes
    assert box["nativeSrs"] == "http://www.opengis.net/def/crs/EPSG/0/4326"
    assert box["bbox"] == pytest.approx((40, 0, 52, 16))  # latitude first


def test_get_coverage_subset_reads_back_exactly(service, coverages):
    _, triple = coverages
    response = service.getCoverage(identifier=coverage_id(triple), format="image/tiff",
                                    subsets=[("Long", 2, 6), ("Lat", 44, 48)])
    pixels, meta = read_geotiff(response.read())
    assert np.array_equal(pixels, raster_pixels(64, 48, 3)[:, 16:32, 8:24])
    assert meta["crs"].to_epsg() == 4326 and meta["bounds"] == pytest.approx((2, 44, 6, 48))
    assert meta["nodata"] == 250


def test_get_coverage_whole_and_reprojected(service, coverages):
    single, _ = coverages
    whole = service.getCoverage(identifier=coverage_id(single), format="image/tiff")
    pixels, _ = read_geotiff(whole.read())
    assert np.array_equal(pixels, raster_pixels())
    reprojected = service.getCoverage(identifier=coverage_id(single), format="image/tiff",
                                      subsets=[("Long", 2, 6), ("Lat", 44, 48)],
                                      OUTPUTCRS="http://www.opengis.net/def/crs/EPSG/0/3857")
    _, meta = read_geotiff(reprojected.read())
    assert meta["crs"].to_epsg() == 3857
    west = meta["bounds"][0]
    assert west <= 222639 < west + meta["transform"].a  # Long 2 in metres, widened to a whole pixel


def test_unknown_coverage_is_an_error(service):
    with pytest.raises((ServiceException, HTTPError)):
        service.getCoverage(identifier="geonode__nothing", format="image/tiff").read()
