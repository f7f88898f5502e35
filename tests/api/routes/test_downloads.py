"""download_url (/datasets/{alternate}/dataset_download) and the desktop-viewer KML link."""

from __future__ import annotations

import numpy as np
import pytest
import rasterio
from lxml import etree

import cartotheca  # noqa: F401  (PROJ_DATA before rasterio)
from tests.conftest import basic
from tests.factories import PASSWORD, make_user
from tests.geodata.fixtures import POINTS, publish_file, raster_pixels, write_points, write_raster
from tests.ows.conftest import make_private
from tests.ows.wfs_fixtures import NS, read_features

VIEW_ONLY = {"users": {"AnonymousUser": ["view_resourcebase"]}, "groups": {}}


@pytest.fixture
def owner(db):
    return make_user(db)


@pytest.fixture
def points(db, settings, owner, tmp_path):
    return publish_file(db, settings, owner, write_points(tmp_path), title="Observations")


def test_vector_download_is_a_zipped_shapefile(client, tmp_path, points):
    response = client.get(f"/datasets/{points.alternate}/dataset_download")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/zip"
    assert 'filename="points.zip"' in response.headers["content-disposition"]
    path = tmp_path / "download.zip"
    path.write_bytes(response.content)
    read = read_features(f"/vsizip/{path}")
    assert read["crs"] == "EPSG:4326"
    assert read["name"] == [p["name"] for p in POINTS]
    assert np.allclose(read["value"], [p["value"] for p in POINTS])
    coords = np.array([[g.x, g.y] for g in read["geometries"]])
    assert np.allclose(coords, [[p["lon"], p["lat"]] for p in POINTS])


def test_vector_download_keeps_the_native_crs(client, db, settings, owner, tmp_path):
    resource = publish_file(db, settings, owner, write_points(tmp_path, crs="EPSG:3857"))
    response = client.get(f"/datasets/{resource.alternate}/dataset_download")
    path = tmp_path / "download.zip"
    path.write_bytes(response.content)
    read = read_features(f"/vsizip/{path}")
    assert read["crs"] == "EPSG:3857"
    assert abs(read["geometries"][0].x - (-1113194.9)) < 1


def test_raster_download_is_the_geotiff(client, db, settings, owner, tmp_path):
    resource = publish_file(db, settings, owner, write_raster(tmp_path))
    response = client.get(f"/datasets/{resource.alternate}/dataset_download")
    assert response.status_code == 200
    assert response.headers["content-type"] == "image/tiff"
    assert response.headers["content-disposition"].startswith('attachment; filename="raster')
    assert int(response.headers["content-length"]) == len(response.content)
    path = tmp_path / "download.tif"
    path.write_bytes(response.content)
    with rasterio.open(path) as src:
        assert src.crs.to_epsg() == 4326
        assert np.allclose(src.bounds, (0.0, 40.0, 16.0, 52.0))
        assert np.array_equal(src.read(), raster_pixels())


def test_download_needs_the_download_permission(client, db, settings, owner, tmp_path):
    resource = publish_file(db, settings, owner, write_points(tmp_path), permissions=VIEW_ONLY)
    assert client.get(f"/api/v2/resources/{resource.id}").status_code == 200
    denied = client.get(f"/datasets/{resource.alternate}/dataset_download")
    assert denied.status_code == 403
    assert denied.json()["success"] is False
    allowed = client.get(f"/datasets/{resource.alternate}/dataset_download",
                         headers=basic(owner.username, PASSWORD))
    assert allowed.status_code == 200


def test_private_and_unknown_datasets_are_not_found(client, db, settings, points):
    make_private(db, settings, points)
    assert client.get(f"/datasets/{points.alternate}/dataset_download").status_code == 404
    assert client.get("/datasets/geonode:nothing/dataset_download").status_code == 404


def test_desktop_kml_is_a_network_link_to_the_wms(client, points):
    response = client.get(f"/datasets/{points.alternate}/desktop.kml")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/vnd.google-earth.kml+xml")
    root = etree.fromstring(response.content)
    link = root.find(".//kml:NetworkLink/kml:Link", NS)
    assert link.findtext("kml:viewRefreshMode", namespaces=NS) == "onStop"
    href = link.findtext("kml:href", namespaces=NS)
    assert href == f"http://testserver/datasets/{points.alternate.replace(':', '%3A')}/desktop.kml"
    view = link.findtext("kml:viewFormat", namespaces=NS)
    assert view.startswith("BBOX=[bboxWest],[bboxSouth],[bboxEast],[bboxNorth]")
    # The viewer appends the view to the link: it gets an overlay of a WMS map of that view.
    overlay = client.get(href.replace("http://testserver", "") + "?BBOX=-12,38,10,52&WIDTH=440&HEIGHT=280")
    ground = etree.fromstring(overlay.content).find(".//kml:GroundOverlay", NS)
    box = ground.find("kml:LatLonBox", NS)
    assert [float(box.findtext(f"kml:{k}", namespaces=NS)) for k in ("west", "south", "east", "north")] \
        == [-12, 38, 10, 52]
    wms_url = ground.findtext("kml:Icon/kml:href", namespaces=NS)
    assert wms_url.startswith("http://testserver/ows?service=WMS")
    assert "layers=geonode%3Apoints" in wms_url and "width=440" in wms_url
    image = client.get(wms_url.replace("http://testserver", ""))
    assert image.status_code == 200 and image.headers["content-type"] == "image/png"


def test_desktop_kml_follows_view_permission_and_checks_the_view(client, db, settings, points):
    bad = client.get(f"/datasets/{points.alternate}/desktop.kml", params={"BBOX": "10,40,0,50"})
    assert bad.status_code == 400
    make_private(db, settings, points)
    assert client.get(f"/datasets/{points.alternate}/desktop.kml").status_code == 404
