"""XYZ tiles: raster PNGs compared with rio-tiler's own tiles, vector PNGs by their colours, vector
tiles decoded feature by feature; caching headers and permissions."""

from __future__ import annotations

import mapbox_vector_tile
import morecantile
import numpy as np
import pytest
from fastapi.testclient import TestClient
from pyproj import Transformer
from rio_tiler.io import Reader
from sqlalchemy import select, update

from cartotheca.db.models import Style
from tests.conftest import basic
from tests.factories import PASSWORD, make_user
from tests.geodata.fixtures import POINTS, raster_pixels
from tests.ows.conftest import make_private
from tests.ows.raster_fixtures import (
    cog_path,
    publish_points,
    publish_polygons,
    publish_raster,
)
from tests.support.pixels import png_bands

MERCATOR = morecantile.tms.get("WebMercatorQuad")
TO_MERCATOR = Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True)
MVT_TYPE = "application/vnd.mapbox-vector-tile"


@pytest.fixture
def owner(db):
    return make_user(db)


@pytest.fixture
def raster(db, settings, owner, tmp_path):
    return publish_raster(db, settings, owner, tmp_path)


@pytest.fixture
def rgb(db, settings, owner, tmp_path):
    """Three bands with nodata 0, 256 x 192 pixels over lon 0..16, lat 40..52."""
    return publish_raster(db, settings, owner, tmp_path, "rgb", bands=3, nodata=0, width=256, height=192)


@pytest.fixture
def points(db, settings, owner, tmp_path):
    return publish_points(db, settings, owner, tmp_path)


@pytest.fixture
def polygons(db, settings, owner, tmp_path):
    return publish_polygons(db, settings, owner, tmp_path)


def tile_url(resource, tile, ext="png") -> str:
    return f"/tiles/{resource.alternate}/{tile.z}/{tile.x}/{tile.y}.{ext}"


def rio_tiler_tile(path: str, tile):
    with Reader(path) as reader:
        return reader.tile(tile.x, tile.y, tile.z)


def tile_pixel(tile, lon: float, lat: float, size: int = 256) -> tuple[int, int]:
    """(row, column) of a lon/lat inside a tile's image."""
    left, bottom, right, top = MERCATOR.xy_bounds(tile)
    x, y = TO_MERCATOR.transform(lon, lat)
    return int((top - y) / (top - bottom) * size), int((x - left) / (right - left) * size)


# -- raster tiles ------------------------------------------------------------------------------

@pytest.mark.parametrize("zoom", [4, 6, 8])
def test_raster_tile_is_rio_tilers_tile(client, db, settings, raster, zoom):
    tile = MERCATOR.tile(15.9, 51.9, zoom)  # the north-east corner: data and outside in one tile
    response = client.get(tile_url(raster, tile))
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "image/png"
    expected = rio_tiler_tile(cog_path(db, settings, raster), tile)
    bands = png_bands(response.content)
    assert bands.shape == (2, 256, 256)  # grey and alpha
    assert np.array_equal(bands[0], expected.data[0])
    assert np.array_equal(bands[1], expected.mask)
    assert 0 < (expected.mask == 255).sum() < 256 * 256


def test_rgb_tile_with_nodata_is_rio_tilers_tile(client, db, settings, rgb):
    tile = MERCATOR.tile(15.9, 40.1, 6)  # the south-east corner
    response = client.get(tile_url(rgb, tile))
    expected = rio_tiler_tile(cog_path(db, settings, rgb), tile)
    bands = png_bands(response.content)
    assert bands.shape == (4, 256, 256)
    assert np.array_equal(bands[:3], expected.data)
    assert np.array_equal(bands[3], expected.mask)
    assert (expected.mask == 0).any() and (expected.mask == 255).any()


def test_float_raster_tile_is_stretched_over_the_value_range(client, db, settings, owner, tmp_path):
    floats = publish_raster(db, settings, owner, tmp_path, "floats", dtype="float32")
    tile = MERCATOR.tile(8, 46, 5)
    response = client.get(tile_url(floats, tile))
    expected = rio_tiler_tile(cog_path(db, settings, floats), tile)
    values = raster_pixels(dtype="float32")
    expected.rescale(in_range=((float(values.min()), float(values.max())),))
    bands = png_bands(response.content)
    assert bands.dtype == np.uint8 and bands.shape == (2, 256, 256)
    assert np.array_equal(bands[0], expected.data[0]) and np.array_equal(bands[1], expected.mask)
    assert len(np.unique(bands[0])) > 100


def test_tiles_away_from_the_data_are_transparent(client, raster):
    tile = MERCATOR.tile(-120, -30, 5)
    response = client.get(tile_url(raster, tile))
    assert response.status_code == 200
    assert not png_bands(response.content)[-1].any()


@pytest.mark.parametrize("path", [
    "/tiles/{alt}/25/0/0.png",  # beyond the last zoom level
    "/tiles/{alt}/3/8/0.png",  # column outside the matrix
    "/tiles/{alt}/3/0/8.png",
    "/tiles/{alt}/3/-1/0.png",
    "/tiles/{alt}/3/0/0.jpg",
    "/tiles/{alt}/3/4/2.pbf",  # no vector tiles of a raster
    "/tiles/{alt}/EPSG:4326/3/4/2.png",
    "/tiles/geonode:nothing/3/4/2.png",
])
def test_tiles_that_do_not_exist_are_404(client, raster, path):
    assert client.get(path.format(alt=raster.alternate)).status_code == 404


# -- vector tiles as images --------------------------------------------------------------------

def test_vector_png_tile_draws_the_default_style(client, polygons):
    tile = MERCATOR.tile(10, 50, 3)
    response = client.get(tile_url(polygons, tile))
    assert response.status_code == 200 and response.headers["content-type"] == "image/png"
    image = png_bands(response.content)
    colours = {name: tuple(image[:, r, c]) for name, (r, c) in {
        "north-west": tile_pixel(tile, 5, 55), "north-east": tile_pixel(tile, 15, 55),
        "south-west": tile_pixel(tile, 8, 48), "centre": tile_pixel(tile, 5, 45),
        "south-east": tile_pixel(tile, 15, 45), "outside": tile_pixel(tile, 30, 50)}.items()}
    assert colours == {"north-west": (255, 0, 0, 255), "north-east": (0, 255, 0, 255),
                       "south-west": (0, 0, 255, 255), "centre": (255, 0, 255, 255),
                       "south-east": (255, 255, 0, 255), "outside": (0, 0, 0, 0)}


# -- Mapbox vector tiles -----------------------------------------------------------------------

def test_point_vector_tile_has_features_where_they_are(client, points):
    tile = MERCATOR.tile(-5, 42, 2)  # lon -90..0, lat 0..66.5
    for ext in ("pbf", "mvt"):
        response = client.get(tile_url(points, tile, ext))
        assert response.status_code == 200 and response.headers["content-type"] == MVT_TYPE
    decoded = mapbox_vector_tile.decode(response.content, default_options={"y_coord_down": True})
    layer = decoded["points"]
    assert layer["extent"] == 4096
    features = {f["properties"]["id"]: f for f in layer["features"]}
    # points 1-5 lie inside; point 6 sits on the east edge, kept by the tile's buffer
    assert sorted(features) == [1, 2, 3, 4, 5, 6]
    left, bottom, right, top = MERCATOR.xy_bounds(tile)
    for row in POINTS[:6]:
        feature = features[row["id"]]
        x, y = TO_MERCATOR.transform(row["lon"], row["lat"])
        expected = ((x - left) / (right - left) * 4096, (top - y) / (top - bottom) * 4096)
        assert feature["geometry"]["type"] == "Point"
        assert feature["geometry"]["coordinates"] == pytest.approx(expected, abs=1)
        assert feature["properties"] == {"id": row["id"], "name": row["name"], "value": row["value"],
                                         "category": row["category"],
                                         "observed": row["observed"].isoformat()}


def test_polygon_vector_tile_is_clipped_to_the_buffered_tile(client, polygons):
    tile = MERCATOR.tile(10, 50, 4)  # lon 0..22.5, lat 40.98..55.78: the northern squares are cut
    response = client.get(tile_url(polygons, tile, "pbf"))
    layer = mapbox_vector_tile.decode(response.content, default_options={"y_coord_down": True})["polygons"]
    by_name = {f["properties"]["name"]: f for f in layer["features"]}
    assert set(by_name) == {"north-west", "north-east", "south-west", "south-east", "centre"}
    assert by_name["centre"]["properties"] == {"name": "centre", "color": "#ff00ff", "rank": 5, "area": 4.0}
    for feature in layer["features"]:
        assert feature["geometry"]["type"] == "Polygon"
        xy = np.array(feature["geometry"]["coordinates"][0])
        assert xy.min() >= -64 and xy.max() <= 4096 + 64  # clipped to the 64-unit buffer
    north_west = np.array(by_name["north-west"]["geometry"]["coordinates"][0])
    assert north_west[:, 1].min() == -64  # cut at the top of the buffer
    assert north_west[:, 0].min() == pytest.approx(0, abs=1)  # lon 0 is the tile's west edge
    left, _, right, _ = MERCATOR.xy_bounds(tile)
    lon10 = (TO_MERCATOR.transform(10, 50)[0] - left) / (right - left) * 4096
    assert north_west[:, 0].max() == pytest.approx(lon10, abs=1)


def test_empty_vector_tile_is_204(client, points):
    response = client.get(tile_url(points, MERCATOR.tile(120, -30, 6), "pbf"))
    assert response.status_code == 204 and response.content == b""
    assert response.headers["content-type"] == MVT_TYPE


# -- caching and permissions -------------------------------------------------------------------

def test_etag_confirms_a_cached_tile_until_the_style_changes(client, db, polygons):
    tile = MERCATOR.tile(10, 50, 3)
    first = client.get(tile_url(polygons, tile))
    etag = first.headers["etag"]
    assert first.headers["cache-control"] == "public, max-age=300"
    again = client.get(tile_url(polygons, tile), headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == etag
    assert client.get(tile_url(polygons, MERCATOR.tile(10, 50, 4))).headers["etag"] != etag
    style = db.scalars(select(Style).where(Style.dataset_id == polygons.id)).first()
    db.execute(update(Style).where(Style.id == style.id).values(
        sld_body=style.sld_body.replace("#ff0000", "#000000")))
    db.commit()
    changed = client.get(tile_url(polygons, tile), headers={"If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["etag"] != etag


def test_private_dataset_tiles_need_view_permission(client, db, settings, owner, raster):
    make_private(db, settings, raster)
    tile = MERCATOR.tile(8, 46, 5)
    assert client.get(tile_url(raster, tile)).status_code == 404
    stranger = make_user(db)
    assert client.get(tile_url(raster, tile), headers=basic(stranger.username, PASSWORD)).status_code == 404
    response = client.get(tile_url(raster, tile), headers=basic(owner.username, PASSWORD))
    assert response.status_code == 200
    assert response.headers["cache-control"] == "private, max-age=300"


def test_lockdown_asks_anonymous_clients_for_credentials(make_app, owner, raster):
    tile = MERCATOR.tile(8, 46, 5)
    with TestClient(make_app(LOCKDOWN_GEONODE=True)) as locked:
        refused = locked.get(tile_url(raster, tile))
        assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Basic")
        assert locked.get(tile_url(raster, tile), headers=basic(owner.username, PASSWORD)).status_code == 200
