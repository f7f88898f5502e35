"""The first requests a freshly started server answers come in parallel (every tile client asks
for a screenful at once): none of them may fail because another thread is still loading a module.

Each test publishes a raster through the real ingest, then starts a fresh ``cartotheca serve``
process, so nothing but what start-up loads has been imported when the parallel requests arrive.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import morecantile

from tests.ows.raster_fixtures import coverage_id
from tests.support.processes import serving

MERCATOR = morecantile.tms.get("WebMercatorQuad")
PARALLEL = 8


def _get_all(urls: list[tuple[str, dict]]) -> list[httpx.Response]:
    """Every request sent at once, each on its own connection."""
    def get(item: tuple[str, dict]) -> httpx.Response:
        url, params = item
        return httpx.get(url, params=params, timeout=60)

    with ThreadPoolExecutor(max_workers=len(urls)) as pool:
        return list(pool.map(get, urls))


def _tile_requests(base: str, alternate: str) -> list[tuple[str, dict]]:
    """Four XYZ tiles and four WMTS GetTile requests over the raster (lon 0..16, lat 40..52)."""
    tiles = [MERCATOR.tile(lon, lat, zoom) for lon, lat, zoom in
             ((4, 44, 5), (12, 48, 5), (8, 46, 6), (2, 50, 4))]
    xyz = [(f"{base}tiles/{alternate}/{t.z}/{t.x}/{t.y}.png", {}) for t in tiles]
    wmts = [(f"{base}ows", {"SERVICE": "WMTS", "REQUEST": "GetTile", "VERSION": "1.0.0",
                            "LAYER": alternate, "STYLE": "", "FORMAT": "image/png",
                            "TILEMATRIXSET": "WebMercatorQuad", "TILEMATRIX": str(t.z),
                            "TILEROW": str(t.y), "TILECOL": str(t.x)}) for t in tiles]
    return xyz + wmts


def _assert_all_png(responses: list[httpx.Response], log_tail: str) -> None:
    failures = [(r.request.url, r.status_code, r.text[:300]) for r in responses
                if r.status_code != 200]
    assert not failures, (failures, log_tail)
    assert all(r.content[:8] == b"\x89PNG\r\n\x1a\n" for r in responses)


def test_parallel_first_raster_tiles_of_a_fresh_server(make_settings, raster, tmp_path):
    with serving(make_settings, tmp_path / "server.log") as server:
        requests = _tile_requests(server.url, raster.alternate)
        assert len(requests) == PARALLEL
        responses = _get_all(requests)
        _assert_all_png(responses, server.log_tail())


def test_parallel_first_coverages_maps_and_tiles_of_a_fresh_server(make_settings, raster, tmp_path):
    with serving(make_settings, tmp_path / "server.log") as server:
        ows = f"{server.url}ows"
        coverage = {"SERVICE": "WCS", "REQUEST": "GetCoverage", "VERSION": "2.0.1",
                    "COVERAGEID": coverage_id(raster), "FORMAT": "image/tiff"}
        wms_map = {"SERVICE": "WMS", "REQUEST": "GetMap", "VERSION": "1.3.0",
                   "LAYERS": raster.alternate, "STYLES": "", "CRS": "EPSG:4326",
                   "BBOX": "40,0,52,16", "WIDTH": "64", "HEIGHT": "48", "FORMAT": "image/png"}
        tile = MERCATOR.tile(8, 46, 6)
        requests = [(ows, coverage), (ows, coverage), (ows, wms_map), (ows, wms_map),
                    (f"{server.url}tiles/{raster.alternate}/{tile.z}/{tile.x}/{tile.y}.png", {}),
                    (f"{server.url}tiles/{raster.alternate}/{tile.z}/{tile.x}/{tile.y}.png", {}),
                    (ows, {"SERVICE": "WMTS", "REQUEST": "GetCapabilities"}),
                    (ows, {"SERVICE": "WCS", "REQUEST": "DescribeCoverage", "VERSION": "2.0.1",
                           "COVERAGEID": coverage_id(raster)})]
        responses = _get_all(requests)
        failures = [(r.request.url, r.status_code, r.text[:300]) for r in responses
                    if r.status_code != 200]
        assert not failures, (failures, server.log_tail())
        assert [r.headers["content-type"].split(";")[0] for r in responses[:4]] == \
            ["image/tiff", "image/tiff", "image/png", "image/png"]


def test_parallel_first_vector_requests_of_a_fresh_server(make_settings, polygons, tmp_path):
    """Features, vector tiles and maps read the vector store (pyarrow, pyogrio) from the start."""
    with serving(make_settings, tmp_path / "server.log") as server:
        ows = f"{server.url}ows"
        features = {"SERVICE": "WFS", "REQUEST": "GetFeature", "VERSION": "2.0.0",
                    "TYPENAMES": polygons.alternate, "OUTPUTFORMAT": "application/json"}
        wms_map = {"SERVICE": "WMS", "REQUEST": "GetMap", "VERSION": "1.3.0",
                   "LAYERS": polygons.alternate, "STYLES": "", "CRS": "EPSG:4326",
                   "BBOX": "40,0,60,20", "WIDTH": "64", "HEIGHT": "64", "FORMAT": "image/png"}
        tile = MERCATOR.tile(10, 50, 4)
        pbf = f"{server.url}tiles/{polygons.alternate}/{tile.z}/{tile.x}/{tile.y}.pbf"
        png = f"{server.url}tiles/{polygons.alternate}/{tile.z}/{tile.x}/{tile.y}.png"
        requests = [(ows, features), (ows, features), (pbf, {}), (pbf, {}), (png, {}), (png, {}),
                    (ows, wms_map), (ows, wms_map)]
        responses = _get_all(requests)
        failures = [(r.request.url, r.status_code, r.text[:300]) for r in responses
                    if r.status_code != 200]
        assert not failures, (failures, server.log_tail())
        assert all(len(r.json()["features"]) == 5 for r in responses[:2])
        assert all(r.content for r in responses[2:4])
