"""WMTS 1.0.0 (KVP) against datasets published through the real ingest: capabilities read back
(by us and by OWSLib), tiles compared with rio-tiler's own reading and with the XYZ routes."""

from __future__ import annotations

import mapbox_vector_tile
import morecantile
import numpy as np
import pytest
from lxml import etree
from owslib.wmts import WebMapTileService
from rio_tiler.io import Reader

from tests.ows.conftest import make_private
from tests.ows.raster_fixtures import cog_path
from tests.support.pixels import png_bands

WMTS = "{http://www.opengis.net/wmts/1.0}"
OWS = "{http://www.opengis.net/ows/1.1}"
XLINK = "{http://www.w3.org/1999/xlink}href"
MERCATOR = morecantile.tms.get("WebMercatorQuad")
CRS84 = morecantile.tms.get("WorldCRS84Quad")


def wmts(client, **params):
    return client.get("/ows", params={"SERVICE": "WMTS", **{k.upper(): v for k, v in params.items()}})


def get_tile(client, layer: str, z: int, col: int, row: int, tms: str = "WebMercatorQuad",
             fmt: str = "image/png"):
    return wmts(client, request="GetTile", version="1.0.0", layer=layer, style="", format=fmt,
                tilematrixset=tms, tilematrix=str(z), tilerow=str(row), tilecol=str(col))


def exception(response) -> tuple[str, str | None]:
    root = etree.fromstring(response.content)
    node = root.find(f"{OWS}Exception")
    assert node is not None, response.text
    return node.get("exceptionCode"), node.get("locator")


def raster_tile(tms, lon: float, lat: float, z: int) -> morecantile.Tile:
    return tms.tile(lon, lat, z)


# -- GetCapabilities ---------------------------------------------------------------------------

def test_capabilities_list_visible_layers_with_both_tile_matrix_sets(client, db, settings, raster, polygons,
                                                                     points):
    make_private(db, settings, points)
    response = wmts(client, request="GetCapabilities")
    assert response.status_code == 200, response.text
    root = etree.fromstring(response.content)
    assert root.tag == f"{WMTS}Capabilities" and root.get("version") == "1.0.0"
    get_tile_op = [op for op in root.iter(f"{OWS}Operation") if op.get("name") == "GetTile"][0]
    assert get_tile_op.find(f".//{OWS}Get").get(XLINK) == "http://testserver/ows?"
    layers = {layer.findtext(f"{OWS}Identifier"): layer for layer in root.iter(f"{WMTS}Layer")}
    assert set(layers) == {raster.alternate, polygons.alternate}
    raster_layer, polygon_layer = layers[raster.alternate], layers[polygons.alternate]
    assert [f.text for f in raster_layer.findall(f"{WMTS}Format")] == ["image/png"]
    assert [f.text for f in polygon_layer.findall(f"{WMTS}Format")] == ["image/png",
                                                                        "application/vnd.mapbox-vector-tile"]
    box = raster_layer.find(f"{OWS}WGS84BoundingBox")
    assert [float(v) for v in box.findtext(f"{OWS}LowerCorner").split()] == pytest.approx([0, 40])
    links = {link.findtext(f"{WMTS}TileMatrixSet"): link
             for link in raster_layer.findall(f"{WMTS}TileMatrixSetLink")}
    assert set(links) == {"WebMercatorQuad", "WorldCRS84Quad"}
    limits = {lim.findtext(f"{WMTS}TileMatrix"): lim
              for lim in links["WebMercatorQuad"].iter(f"{WMTS}TileMatrixLimits")}
    assert len(limits) == 25
    z4 = [int(limits["4"].findtext(f"{WMTS}{tag}")) for tag in ("MinTileRow", "MaxTileRow", "MinTileCol",
                                                                  "MaxTileCol")]
    north_west, south_east = MERCATOR.tile(0.001, 51.999, 4), MERCATOR.tile(15.999, 40.001, 4)
    assert z4 == [north_west.y, south_east.y, north_west.x, south_east.x]
    templates = {url.get("format"): url.get("template")
                 for url in polygon_layer.findall(f"{WMTS}ResourceURL")}
    assert templates == {
        "image/png": f"http://testserver/tiles/{polygons.alternate}/{{TileMatrixSet}}/{{TileMatrix}}/"
                     "{TileCol}/{TileRow}.png",
        "application/vnd.mapbox-vector-tile": f"http://testserver/tiles/{polygons.alternate}/"
                                              "{TileMatrixSet}/{TileMatrix}/{TileCol}/{TileRow}.pbf"}
    sets = {s.findtext(f"{OWS}Identifier"): s for s in root.findall(f"{WMTS}Contents/{WMTS}TileMatrixSet")}
    mercator = sets["WebMercatorQuad"]
    assert mercator.findtext(f"{OWS}SupportedCRS") == "urn:ogc:def:crs:EPSG::3857"
    matrices = mercator.findall(f"{WMTS}TileMatrix")
    assert [m.findtext(f"{OWS}Identifier") for m in matrices] == [str(z) for z in range(25)]
    assert matrices[3].findtext(f"{WMTS}MatrixWidth") == "8"
    assert float(matrices[0].findtext(f"{WMTS}ScaleDenominator")) == pytest.approx(559082264.0287178)
    assert [float(v) for v in matrices[0].findtext(f"{WMTS}TopLeftCorner").split()] == \
        pytest.approx([-20037508.3427892, 20037508.3427892])
    crs84_first = sets["WorldCRS84Quad"].find(f"{WMTS}TileMatrix")
    assert crs84_first.findtext(f"{WMTS}MatrixWidth") == "2"
    assert crs84_first.findtext(f"{WMTS}MatrixHeight") == "1"


def test_owslib_reads_the_capabilities(client, raster, polygons):
    content = wmts(client, request="GetCapabilities").content
    service = WebMapTileService("http://testserver/ows", xml=content)
    assert set(service.contents) == {raster.alternate, polygons.alternate}
    assert {"WebMercatorQuad", "WorldCRS84Quad"} <= set(service.tilematrixsets)
    layer = service.contents[polygons.alternate]
    assert layer.boundingBoxWGS84 == pytest.approx((0, 40, 20, 60))
    assert "image/png" in layer.formats
    assert {url["format"] for url in layer.resourceURLs} == {"image/png",
                                                             "application/vnd.mapbox-vector-tile"}
    assert service.tilematrixsets["WebMercatorQuad"].tilematrix["5"].matrixwidth == 32


# -- GetTile -----------------------------------------------------------------------------------

def test_get_tile_is_rio_tilers_tile_and_the_xyz_tile(client, db, settings, raster):
    tile = raster_tile(MERCATOR, 8, 46, 5)
    response = get_tile(client, raster.alternate, tile.z, tile.x, tile.y)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "image/png"
    bands = png_bands(response.content)
    with Reader(cog_path(db, settings, raster)) as reader:
        expected = reader.tile(tile.x, tile.y, tile.z)
    assert np.array_equal(bands[0], expected.data[0])
    assert np.array_equal(bands[-1], expected.mask)
    xyz = client.get(f"/tiles/{raster.alternate}/{tile.z}/{tile.x}/{tile.y}.png")
    assert xyz.content == response.content


def test_get_tile_in_world_crs84_quad(client, db, settings, raster):
    tile = raster_tile(CRS84, 8, 46, 4)
    response = get_tile(client, raster.alternate, tile.z, tile.x, tile.y, tms="WorldCRS84Quad")
    assert response.status_code == 200, response.text
    with Reader(cog_path(db, settings, raster), tms=CRS84) as reader:
        expected = reader.tile(tile.x, tile.y, tile.z)
    bands = png_bands(response.content)
    assert np.array_equal(bands[0], expected.data[0]) and np.array_equal(bands[-1], expected.mask)
    assert expected.mask.any() and not expected.mask.all()  # the tile holds data and its edge
    rest = client.get(f"/tiles/{raster.alternate}/WorldCRS84Quad/{tile.z}/{tile.x}/{tile.y}.png")
    assert rest.content == response.content


def test_vector_layers_give_png_and_vector_tiles(client, points):
    tile = MERCATOR.tile(-5, 42, 2)  # lon -90..0, lat 0..66.5: points 1-5, and 6 on its east edge
    png = get_tile(client, points.alternate, tile.z, tile.x, tile.y)
    assert png.status_code == 200 and png.content[:4] == b"\x89PNG"
    mvt = get_tile(client, points.alternate, tile.z, tile.x, tile.y,
                   fmt="application/vnd.mapbox-vector-tile")
    assert mvt.status_code == 200 and mvt.headers["content-type"] == "application/vnd.mapbox-vector-tile"
    layer = mapbox_vector_tile.decode(mvt.content)["points"]
    assert sorted(f["properties"]["id"] for f in layer["features"]) == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize(("changes", "code", "locator"), [
    ({"tilerow": "16"}, "TileOutOfRange", "tilerow"),
    ({"tilecol": "-1"}, "TileOutOfRange", "tilecol"),
    ({"tilecol": "15"}, "TileOutOfRange", "tilecol"),  # inside the matrix, outside the layer
    ({"tilematrix": "30"}, "InvalidParameterValue", "tilematrix"),
    ({"tilematrixset": "EPSG:4326"}, "InvalidParameterValue", "tilematrixset"),
    ({"format": "image/gif"}, "InvalidParameterValue", "format"),
    ({"format": "application/vnd.mapbox-vector-tile"}, "InvalidParameterValue", "format"),
    ({"layer": "geonode:nothing"}, "InvalidParameterValue", "layer"),
    ({"tilerow": None}, "MissingParameterValue", "tilerow"),
])
def test_get_tile_errors(client, raster, changes, code, locator):
    tile = raster_tile(MERCATOR, 8, 46, 4)
    params = {"service": "WMTS", "request": "GetTile", "version": "1.0.0", "layer": raster.alternate,
              "style": "", "format": "image/png", "tilematrixset": "WebMercatorQuad", "tilematrix": "4",
              "tilerow": str(tile.y), "tilecol": str(tile.x)}
    params.update(changes)
    response = client.get("/ows", params={k: v for k, v in params.items() if v is not None})
    assert response.status_code in (400, 404), response.text
    assert exception(response) == (code, locator)


def test_hidden_layers_are_unknown(client, db, settings, raster):
    make_private(db, settings, raster)
    tile = raster_tile(MERCATOR, 8, 46, 4)
    response = get_tile(client, raster.alternate, tile.z, tile.x, tile.y)
    assert exception(response) == ("InvalidParameterValue", "layer")
