"""WCS 2.0.1 against rasters published through the real ingest: documents read back, coverages
compared pixel for pixel with what was uploaded."""

from __future__ import annotations

import numpy as np
import pytest
from lxml import etree
from pyproj import Transformer

from tests.conftest import basic
from tests.factories import PASSWORD, make_user
from tests.geodata.fixtures import raster_pixels
from tests.ows.conftest import make_private
from tests.ows.raster_fixtures import (
    RASTER_RES,
    VIEW_ONLY,
    coverage_id,
    publish_raster,
    read_geotiff,
)

WCS = "{http://www.opengis.net/wcs/2.0}"
OWS = "{http://www.opengis.net/ows/2.0}"
GML = "{http://www.opengis.net/gml/3.2}"
SWE = "{http://www.opengis.net/swe/2.0}"
XLINK = "{http://www.w3.org/1999/xlink}href"


def wcs(client, *subsets: str, headers=None, **params):
    query = [("SERVICE", "WCS"), ("VERSION", "2.0.1")]
    query += [(k.upper(), v) for k, v in params.items()]
    query += [("SUBSET", s) for s in subsets]
    return client.get("/ows", params=query, headers=headers or {})


def exception(response) -> tuple[str, str | None]:
    root = etree.fromstring(response.content)
    assert root.tag == f"{OWS}ExceptionReport", response.text
    node = root.find(f"{OWS}Exception")
    return node.get("exceptionCode"), node.get("locator")


def window(rows: slice, cols: slice, bands: int = 1) -> np.ndarray:
    return raster_pixels(64, 48, bands)[:, rows, cols]


@pytest.fixture
def rgb(db, settings, owner, tmp_path):
    """Three bands (band b = (row + 2 col + 40 b) % 251) over lon 0..16, lat 40..52, nodata 250."""
    return publish_raster(db, settings, owner, tmp_path, "rgb", bands=3, nodata=250)


# -- GetCapabilities ---------------------------------------------------------------------------

def test_capabilities_list_the_rasters_the_requester_sees(client, db, settings, raster, rgb, polygons):
    make_private(db, settings, rgb)
    response = wcs(client, request="GetCapabilities")
    assert response.status_code == 200, response.text
    root = etree.fromstring(response.content)
    assert root.tag == f"{WCS}Capabilities" and root.get("version") == "2.0.1"
    assert root.findtext(f"{OWS}ServiceIdentification/{OWS}ServiceType") == "OGC WCS"
    profiles = {p.text for p in root.iter(f"{OWS}Profile")}
    assert "http://www.opengis.net/spec/WCS_service-extension_crs/1.0/conf/crs" in profiles
    operations = {op.get("name"): op for op in root.iter(f"{OWS}Operation")}
    assert set(operations) == {"GetCapabilities", "DescribeCoverage", "GetCoverage"}
    assert operations["GetCoverage"].find(f".//{OWS}Get").get(XLINK) == "http://testserver/ows?"
    assert root.findtext(f"{WCS}ServiceMetadata/{WCS}formatSupported") == "image/tiff"
    summaries = root.findall(f"{WCS}Contents/{WCS}CoverageSummary")
    # the vector dataset is no coverage; the private raster is not shown to the public
    assert [s.findtext(f"{WCS}CoverageId") for s in summaries] == [coverage_id(raster)]
    summary = summaries[0]
    assert coverage_id(raster) == raster.alternate.replace(":", "__")
    assert summary.findtext(f"{OWS}Title") == "Raster"
    assert summary.findtext(f"{WCS}CoverageSubtype") == "RectifiedGridCoverage"
    box = summary.find(f"{OWS}WGS84BoundingBox")
    assert [float(v) for v in box.findtext(f"{OWS}LowerCorner").split()] == pytest.approx([0, 40])
    assert [float(v) for v in box.findtext(f"{OWS}UpperCorner").split()] == pytest.approx([16, 52])

    owner_view = wcs(client, request="GetCapabilities", headers=basic(rgb.owner.username, PASSWORD))
    ids = {e.text for e in etree.fromstring(owner_view.content).iter(f"{WCS}CoverageId")}
    assert ids == {coverage_id(raster), coverage_id(rgb)}


def test_capabilities_refuse_only_unsupported_versions(client, raster):
    response = wcs(client, request="GetCapabilities", acceptversions="1.0.0,1.1.1")
    assert response.status_code == 400 and exception(response)[0] == "VersionNegotiationFailed"
    assert wcs(client, request="GetCapabilities", acceptversions="2.0.1").status_code == 200


# -- DescribeCoverage --------------------------------------------------------------------------

def test_describe_coverage_gives_envelope_grid_and_bands(client, raster, rgb):
    response = wcs(client, request="DescribeCoverage", coverageid=f"{coverage_id(raster)},{coverage_id(rgb)}")
    assert response.status_code == 200, response.text
    root = etree.fromstring(response.content)
    descriptions = root.findall(f"{WCS}CoverageDescription")
    assert [d.findtext(f"{WCS}CoverageId") for d in descriptions] == [coverage_id(raster), coverage_id(rgb)]
    single, triple = descriptions
    envelope = single.find(f"{GML}boundedBy/{GML}Envelope")
    assert envelope.get("srsName") == "http://www.opengis.net/def/crs/EPSG/0/4326"
    assert envelope.get("axisLabels") == "Lat Long"  # EPSG:4326 is latitude first
    assert [float(v) for v in envelope.findtext(f"{GML}lowerCorner").split()] == pytest.approx([40, 0])
    assert [float(v) for v in envelope.findtext(f"{GML}upperCorner").split()] == pytest.approx([52, 16])
    grid = single.find(f"{GML}domainSet/{GML}RectifiedGrid")
    assert grid.findtext(f"{GML}limits/{GML}GridEnvelope/{GML}low") == "0 0"
    assert grid.findtext(f"{GML}limits/{GML}GridEnvelope/{GML}high") == "63 47"
    assert grid.findtext(f"{GML}axisLabels") == "i j"
    origin = [float(v) for v in grid.findtext(f"{GML}origin/{GML}Point/{GML}pos").split()]
    assert origin == pytest.approx([52 - RASTER_RES / 2, RASTER_RES / 2])  # centre of pixel (0, 0)
    offsets = [[float(v) for v in o.text.split()] for o in grid.findall(f"{GML}offsetVector")]
    assert offsets == [pytest.approx([0, RASTER_RES]), pytest.approx([-RASTER_RES, 0])]
    fields = single.findall(f".//{SWE}field")
    assert [f.get("name") for f in fields] == ["band_1"]
    quantity = fields[0].find(f"{SWE}Quantity")
    assert quantity.get("definition") == "http://www.opengis.net/def/dataType/OGC/0/unsignedByte"
    assert quantity.find(f".//{SWE}nilValue") is None
    assert quantity.findtext(f".//{SWE}interval") == "0 255"
    triple_fields = triple.findall(f".//{SWE}field")
    assert [f.get("name") for f in triple_fields] == ["band_1", "band_2", "band_3"]
    assert {f.findtext(f".//{SWE}nilValue") for f in triple_fields} == {"250"}
    assert triple.findtext(f"{WCS}ServiceParameters/{WCS}nativeFormat") == "image/tiff"


def test_describe_coverage_accepts_the_alternate(client, raster):
    response = wcs(client, request="DescribeCoverage", coverageid=raster.alternate)
    assert response.status_code == 200
    assert etree.fromstring(response.content).findtext(f".//{WCS}CoverageId") == coverage_id(raster)


def test_unknown_hidden_or_vector_coverages_are_no_such_coverage(client, db, settings, raster, polygons):
    make_private(db, settings, raster)
    for identifier in ("geonode__nothing", coverage_id(raster), coverage_id(polygons)):
        response = wcs(client, request="DescribeCoverage", coverageid=identifier)
        assert response.status_code == 404, identifier
        assert exception(response) == ("NoSuchCoverage", "coverageId")
    missing = wcs(client, request="DescribeCoverage")
    assert missing.status_code == 400 and exception(missing)[0] == "MissingParameterValue"


# -- GetCoverage -------------------------------------------------------------------------------

def test_whole_coverage_is_the_uploaded_raster(client, raster):
    response = wcs(client, request="GetCoverage", coverageid=coverage_id(raster), format="image/tiff")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "image/tiff"
    pixels, meta = read_geotiff(response.content)
    assert np.array_equal(pixels, raster_pixels())
    assert meta["crs"].to_epsg() == 4326 and meta["bounds"] == pytest.approx((0, 40, 16, 52))


def test_subset_in_lon_lat_is_the_source_window_exactly(client, rgb):
    # Long 2..6, Lat 44..48 → columns 8..23, rows 16..31 (rows count down from lat 52)
    response = wcs(client, "Long(2,6)", "Lat(44,48)", request="GetCoverage", coverageid=coverage_id(rgb))
    assert response.status_code == 200, response.text
    pixels, meta = read_geotiff(response.content)
    assert pixels.shape == (3, 16, 16)
    assert np.array_equal(pixels, window(slice(16, 32), slice(8, 24), bands=3))
    assert meta["bounds"] == pytest.approx((2, 44, 6, 48))
    assert meta["nodata"] == 250 and meta["dtype"] == "uint8"


def test_subset_bounds_inside_pixels_take_every_pixel_touched(client, raster):
    response = wcs(client, "Long(2.1,2.9)", "Lat(51.9,*)", request="GetCoverage",
                   coverageid=coverage_id(raster))
    pixels, meta = read_geotiff(response.content)
    assert np.array_equal(pixels, window(slice(0, 1), slice(8, 12)))
    assert meta["bounds"] == pytest.approx((2, 51.75, 3, 52))


def test_subset_by_grid_axes_and_slices(client, raster):
    response = wcs(client, "i(10,19)", "j(5)", request="GetCoverage", coverageid=coverage_id(raster))
    pixels, _ = read_geotiff(response.content)
    assert np.array_equal(pixels, window(slice(5, 6), slice(10, 20)))
    labelled = wcs(client, "E(1,2)", "N(50,51)", request="GetCoverage", coverageid=coverage_id(raster))
    pixels, _ = read_geotiff(labelled.content)
    assert np.array_equal(pixels, window(slice(4, 8), slice(4, 8)))


def test_subset_in_another_crs_reads_the_native_pixels_it_covers(client, raster):
    to_merc = Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True)
    (x0, x1), (y0, y1) = to_merc.transform([2, 6], [44, 48])
    response = wcs(client, f"X({x0},{x1})", f"Y({y0},{y1})", request="GetCoverage",
                   coverageid=coverage_id(raster), outputcrs="http://www.opengis.net/def/crs/EPSG/0/4326",
                   subsettingcrs="http://www.opengis.net/def/crs/EPSG/0/3857")
    assert response.status_code == 200, response.text
    pixels, meta = read_geotiff(response.content)
    assert meta["crs"].to_epsg() == 4326
    assert np.array_equal(pixels, window(slice(16, 32), slice(8, 24)))


def test_output_crs_reprojects(client, raster):
    response = wcs(client, "Long(2,6)", "Lat(44,48)", request="GetCoverage", coverageid=coverage_id(raster),
                   outputcrs="http://www.opengis.net/def/crs/EPSG/0/3857")
    assert response.status_code == 200, response.text
    pixels, meta = read_geotiff(response.content)
    assert meta["crs"].to_epsg() == 3857
    # the subset (Long 2..6, Lat 44..48 in metres) widened to whole pixels of the output grid
    west, south, east, north = meta["bounds"]
    res = meta["transform"].a
    assert west <= 222639 < west + res and east - res < 667917 <= east
    assert south <= 5465442 < south + res and north - res < 6106854 <= north
    # nearest neighbour: every value is one of the source window's
    assert set(np.unique(pixels)) <= set(np.unique(window(slice(15, 33), slice(7, 25))))


def test_scaling_and_range_subset(client, rgb):
    sized = wcs(client, request="GetCoverage", coverageid=coverage_id(rgb), scalesize="i(32),j(24)",
                rangesubset="band_3,band_1")
    pixels, meta = read_geotiff(sized.content)
    assert pixels.shape == (2, 24, 32) and meta["bounds"] == pytest.approx((0, 40, 16, 52))
    # nearest neighbour: each output pixel is one of the 2 x 2 source pixels it covers
    source = raster_pixels(64, 48, 3)
    for out_band, source_band in ((0, 2), (1, 0)):
        blocks = source[source_band].reshape(24, 2, 32, 2).transpose(0, 2, 1, 3).reshape(24, 32, 4)
        assert (blocks == pixels[out_band][:, :, None]).any(axis=2).all()
    halved = wcs(client, request="GetCoverage", coverageid=coverage_id(rgb), scalefactor="2")
    assert read_geotiff(halved.content)[0].shape == (3, 24, 32)
    bad_band = wcs(client, request="GetCoverage", coverageid=coverage_id(rgb), rangesubset="band_9")
    assert bad_band.status_code == 400 and exception(bad_band)[0] == "InvalidParameterValue"


def test_get_coverage_by_xml_post(client, raster):
    body = f"""<wcs:GetCoverage service="WCS" version="2.0.1" xmlns:wcs="http://www.opengis.net/wcs/2.0"
        xmlns:scal="http://www.opengis.net/wcs/scaling/1.0">
      <wcs:Extension><scal:ScaleByFactor><scal:scaleFactor>1</scal:scaleFactor></scal:ScaleByFactor></wcs:Extension>
      <wcs:CoverageId>{coverage_id(raster)}</wcs:CoverageId>
      <wcs:DimensionTrim><wcs:Dimension>Long</wcs:Dimension><wcs:TrimLow>2</wcs:TrimLow>
        <wcs:TrimHigh>6</wcs:TrimHigh></wcs:DimensionTrim>
      <wcs:DimensionTrim><wcs:Dimension>Lat</wcs:Dimension><wcs:TrimLow>44</wcs:TrimLow>
        <wcs:TrimHigh>48</wcs:TrimHigh></wcs:DimensionTrim>
      <wcs:format>image/tiff</wcs:format>
    </wcs:GetCoverage>"""
    response = client.post("/ows", content=body, headers={"Content-Type": "application/xml"})
    assert response.status_code == 200, response.text
    pixels, _ = read_geotiff(response.content)
    assert np.array_equal(pixels, window(slice(16, 32), slice(8, 24)))
    describe = client.post("/ows", headers={"Content-Type": "text/xml"}, content=(
        '<wcs:DescribeCoverage service="WCS" version="2.0.1" xmlns:wcs="http://www.opengis.net/wcs/2.0">'
        f"<wcs:CoverageId>{coverage_id(raster)}</wcs:CoverageId></wcs:DescribeCoverage>"))
    assert etree.fromstring(describe.content).findtext(f".//{WCS}CoverageId") == coverage_id(raster)


@pytest.mark.parametrize(("subsets", "code"), [
    (("Height(1,2)",), "InvalidAxisLabel"),
    (("Long(1,2)", "E(3,4)"), "InvalidAxisLabel"),
    (("Long(20,30)",), "InvalidSubsetting"),
    (("Lat(48,44)",), "InvalidSubsetting"),
    (("Lat(a,b)",), "InvalidSubsetting"),
    (("Lat[1,2]",), "InvalidSubsetting"),
])
def test_bad_subsets_are_ogc_exceptions(client, raster, subsets, code):
    response = wcs(client, *subsets, request="GetCoverage", coverageid=coverage_id(raster))
    assert response.status_code == 404 and exception(response) == (code, "subset")


def test_other_get_coverage_errors(client, raster):
    no_id = wcs(client, request="GetCoverage")
    assert no_id.status_code == 400 and exception(no_id) == ("MissingParameterValue", "coverageId")
    png = wcs(client, request="GetCoverage", coverageid=coverage_id(raster), format="image/png")
    assert png.status_code == 400 and exception(png) == ("InvalidParameterValue", "format")
    crs = wcs(client, request="GetCoverage", coverageid=coverage_id(raster), outputcrs="EPSG:nonsense")
    assert crs.status_code == 400
    old = wcs(client, request="GetCoverage", coverageid=coverage_id(raster), version="1.0.0")
    assert old.status_code == 400 and exception(old) == ("InvalidParameterValue", "version")
    assert wcs(client, request="Transaction").status_code == 501


def test_get_coverage_needs_the_download_permission(client, db, settings, owner, tmp_path):
    viewable = publish_raster(db, settings, owner, tmp_path, "viewable", permissions=VIEW_ONLY)
    described = wcs(client, request="DescribeCoverage", coverageid=coverage_id(viewable))
    assert described.status_code == 200
    denied = wcs(client, request="GetCoverage", coverageid=coverage_id(viewable))
    assert denied.status_code == 403, denied.text
    stranger = make_user(db)
    assert wcs(client, request="GetCoverage", coverageid=coverage_id(viewable),
               headers=basic(stranger.username, PASSWORD)).status_code == 403
    allowed = wcs(client, request="GetCoverage", coverageid=coverage_id(viewable),
                  headers=basic(owner.username, PASSWORD))
    assert allowed.status_code == 200
    assert np.array_equal(read_geotiff(allowed.content)[0], raster_pixels())
