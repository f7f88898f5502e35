"""Thumbnails: uploads (file, base64, URL) checked and stored, drawn from a box, served with
view permission and cache headers."""

from __future__ import annotations

import base64
import struct
import warnings
import zlib

import numpy as np
import pytest
import rasterio
from pyproj import Transformer
from rasterio.io import MemoryFile

import cartotheca  # noqa: F401  (PROJ_DATA before rasterio/mapnik)
from cartotheca.catalogue.thumbnails import thumbnail_path
from tests.conftest import basic
from tests.factories import PASSWORD, make_resource, make_user
from tests.geodata.fixtures import polygons_sld, publish_file, write_polygons
from tests.ows.conftest import make_private
from tests.support.pixels import pixels


def image_bytes(driver: str, width: int, height: int, rgb=(255, 0, 0)) -> bytes:
    data = np.zeros((3, height, width), dtype=np.uint8)
    for band, value in enumerate(rgb):
        data[band] = value
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rasterio.errors.NotGeoreferencedWarning)
        with MemoryFile() as memory:
            with memory.open(driver=driver, width=width, height=height, count=3, dtype="uint8") as dst:
                dst.write(data)
            return memory.read()


@pytest.fixture
def owner(db):
    return make_user(db, "owner")


@pytest.fixture
def owner_auth(owner):
    return basic("owner", PASSWORD)


@pytest.fixture
def polygons(db, settings, owner, tmp_path):
    return publish_file(db, settings, owner, write_polygons(tmp_path), title="Polygons",
                        sld=polygons_sld())


@pytest.fixture
def document(db, settings, owner):
    return make_resource(db, settings, owner, "Report", resource_type="document")


def set_thumbnail(client, resource_id, headers, **kwargs):
    return client.put(f"/api/v2/resources/{resource_id}/set_thumbnail", headers=headers, **kwargs)


def test_upload_png_is_stored_and_served(client, document, owner_auth, settings):
    png = image_bytes("PNG", 40, 30, (0, 128, 255))
    response = set_thumbnail(client, document.id, owner_auth, files={"file": ("t.png", png, "image/png")})
    assert response.status_code == 200, response.text
    url = response.json()["thumbnail_url"]
    assert url == f"http://testserver/thumbnails/{document.uuid}.png"
    assert thumbnail_path(settings, document.uuid).is_file()
    served = client.get(url)
    assert served.status_code == 200 and served.headers["content-type"] == "image/png"
    image = pixels(served.content)
    assert image.shape == (30, 40, 4) and tuple(image[15, 20]) == (0, 128, 255, 255)
    assert client.get(f"/api/v2/resources/{document.id}").json()["resource"]["thumbnail_url"] == url


def test_jpeg_is_converted_and_large_images_shrunk(client, document, owner_auth, settings):
    jpeg = image_bytes("JPEG", 1000, 400, (250, 250, 0))
    response = set_thumbnail(client, document.id, owner_auth, files={"file": ("t.jpg", jpeg, "image/jpeg")})
    assert response.status_code == 200, response.text
    image = pixels(client.get(response.json()["thumbnail_url"]).content)
    width, height = settings.THUMBNAIL_SIZE
    assert image.shape[1] <= width and image.shape[0] <= height
    assert image.shape[1] / image.shape[0] == pytest.approx(2.5, rel=0.02)
    assert abs(int(image[10, 10][0]) - 250) < 8 and image[10, 10][2] < 10


def test_base64_and_data_url(client, document, owner_auth):
    png = image_bytes("PNG", 8, 8, (0, 255, 0))
    for value in (base64.b64encode(png).decode(), "data:image/png;base64," + base64.b64encode(png).decode()):
        response = set_thumbnail(client, document.id, owner_auth, json={"file": value})
        assert response.status_code == 200, response.text
        assert tuple(pixels(client.get(response.json()["thumbnail_url"]).content)[4, 4][:3]) == (0, 255, 0)
    form = set_thumbnail(client, document.id, owner_auth, data={"file": base64.b64encode(png).decode()},
                         files={"unused": ("x", b"", "text/plain")})
    assert form.status_code == 200, form.text


def test_url_is_kept_as_the_thumbnail(client, document, owner_auth, settings):
    url = "https://images.example.org/previews/report.jpg"
    response = set_thumbnail(client, document.id, owner_auth, json={"file": url})
    assert response.status_code == 200 and response.json() == {"thumbnail_url": url}
    assert client.get(f"/api/v2/resources/{document.id}").json()["resource"]["thumbnail_url"] == url
    assert not thumbnail_path(settings, document.uuid).exists()
    bad = set_thumbnail(client, document.id, owner_auth, json={"file": "https://example.org/page.html"})
    assert bad.status_code == 400
    assert bad.json()["errors"] == ["The url must be of an image with format (png, jpeg or jpg)"]


@pytest.mark.parametrize("kwargs,message", [
    ({"json": {}}, "Field file is required"),
    ({"files": {"other": ("t.png", b"x", "image/png")}}, "Field file is required"),
    ({"files": {"file": ("big.png", b"\x89PNG\r\n\x1a\n" + b"0" * (1024 * 1024 + 10), "image/png")}},
     "File must not exceed 1MB"),
    ({"files": {"file": ("t.gif", b"GIF89a" + b"0" * 100, "image/gif")}}, None),
    ({"files": {"file": ("t.png", b"\x89PNG\r\n\x1a\n" + b"truncated", "image/png")}}, None),
    ({"json": {"file": "!!! not base64 !!!"}}, None),
    ({"files": {"file": ("t.svg", b"<svg xmlns='http://www.w3.org/2000/svg'/>", "image/svg+xml")}}, None),
])
def test_bad_uploads_are_refused(client, document, owner_auth, settings, kwargs, message):
    response = set_thumbnail(client, document.id, owner_auth, **kwargs)
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["success"] is False
    if message:
        assert body["errors"][0] == message
    assert not thumbnail_path(settings, document.uuid).exists()


def test_a_declared_huge_image_is_not_decoded(client, document, owner_auth):
    """A PNG header claiming 60000 x 60000 pixels (a decompression bomb) is refused unread."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 60000, 60000, 8, 0, 0, 0, 0)
    bomb = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 60001)) + \
        chunk(b"IEND", b"")
    response = set_thumbnail(client, document.id, owner_auth, files={"file": ("b.png", bomb, "image/png")})
    assert response.status_code == 400


def test_setting_needs_permission(client, db, document):
    png = image_bytes("PNG", 4, 4)
    upload = {"file": ("t.png", png, "image/png")}
    assert set_thumbnail(client, document.id, {}, files=upload).status_code == 401
    reader = make_user(db, "reader")
    denied = set_thumbnail(client, document.id, basic(reader.username, PASSWORD),
                           files={"file": ("t.png", png, "image/png")})
    assert denied.status_code == 403
    missing = set_thumbnail(client, 999999, basic(reader.username, PASSWORD), json={"file": "x"})
    assert missing.status_code == 404


# -- serving --------------------------------------------------------------------------------


def test_cache_headers_and_revalidation(client, polygons):
    url = client.get(f"/api/v2/datasets/{polygons.id}").json()["dataset"]["thumbnail_url"]
    first = client.get(url)
    assert first.status_code == 200
    assert first.headers["cache-control"].startswith("public, max-age=")
    again = client.get(url, headers={"If-None-Match": first.headers["etag"]})
    assert again.status_code == 304 and again.content == b""


def test_private_thumbnails_are_served_only_to_viewers(client, db, settings, polygons, owner_auth):
    url = client.get(f"/api/v2/datasets/{polygons.id}").json()["dataset"]["thumbnail_url"]
    make_private(db, settings, polygons)
    assert client.get(url).status_code == 404
    reader = make_user(db, "reader")
    assert client.get(url, headers=basic(reader.username, PASSWORD)).status_code == 404
    response = client.get(url, headers=owner_auth)
    assert response.status_code == 200 and response.headers["cache-control"].startswith("private")


def test_unknown_and_odd_names_are_not_found(client):
    for name in ("00000000-0000-0000-0000-000000000000.png", "..%2F..%2Fetc%2Fpasswd", "x.png",
                 "00000000-0000-0000-0000-000000000000.jpg"):
        assert client.get(f"/thumbnails/{name}").status_code == 404, name


# -- drawn from a box -----------------------------------------------------------------------


def test_thumbnail_from_bbox_draws_the_dataset(client, polygons, owner_auth, settings):
    # The north-west square (red) only: lon 1..9, lat 51..59 in Web Mercator
    to_merc = Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True)
    x0, y0 = to_merc.transform(1, 51)
    x1, y1 = to_merc.transform(9, 59)
    response = client.post(f"/api/v2/resources/{polygons.id}/set_thumbnail_from_bbox", headers=owner_auth,
                           json={"bbox": [x0, x1, y0, y1], "srid": "EPSG:3857"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["success"] is True and body["message"] == "Thumbnail correctly created."
    image = pixels(client.get(body["thumbnail_url"]).content)
    height, width = image.shape[:2]
    assert (width, height) == tuple(settings.THUMBNAIL_SIZE)
    assert tuple(image[height // 2, width // 2][:3]) == (255, 0, 0)


def test_thumbnail_from_bbox_errors(client, polygons, document, owner_auth):
    path = f"/api/v2/resources/{polygons.id}/set_thumbnail_from_bbox"
    for body in ({"bbox": [1, 0, 0, 1]}, {"bbox": [0, 1, 0]}, {"bbox": ["a", 1, 0, 1]},
                 {"bbox": [0, 1, 0, 1], "srid": "EPSG:not"}, {}):
        assert client.post(path, json=body, headers=owner_auth).status_code == 400, body
    other = client.post(f"/api/v2/resources/{document.id}/set_thumbnail_from_bbox",
                        json={"bbox": [0, 1, 0, 1], "srid": "EPSG:4326"}, headers=owner_auth)
    assert other.status_code == 405
    assert client.post(path, json={"bbox": [0, 1, 0, 1]}).status_code == 401
    assert client.post("/api/v2/resources/999999/set_thumbnail_from_bbox", json={"bbox": [0, 1, 0, 1]},
                       headers=owner_auth).status_code == 404
