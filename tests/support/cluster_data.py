"""What the cluster tests publish and draw: one square polygon per dataset, filled in one colour
by its style, so a pixel of a map says which data and which style a node drew."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx

from tests.support.pixels import pixels

UPLOAD_URL = "api/v2/uploads/upload"
# The map every check draws: lon 0..20, lat 40..50; the west square fills the left half, the
# east square the right half.
WEST, EAST = (0.0, 40.0, 10.0, 50.0), (10.0, 40.0, 20.0, 50.0)
MAP_BBOX = (0.0, 40.0, 20.0, 50.0)
TRANSPARENT = [0, 0, 0, 0]


def write_square(folder: Path, name: str, bounds: tuple[float, float, float, float]) -> Path:
    """A GeoJSON file of one square polygon named ``name``."""
    x0, y0, x1, y1 = bounds
    ring = [[x0, y0], [x1, y0], [x1, y1], [x0, y1], [x0, y0]]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.geojson"
    path.write_text(json.dumps({"type": "FeatureCollection", "features": [
        {"type": "Feature", "properties": {"label": name},
         "geometry": {"type": "Polygon", "coordinates": [ring]}}]}))
    return path


def fill_sld(layer: str, colour: str) -> str:
    """Every feature filled with ``colour`` (#rrggbb)."""
    return ('<?xml version="1.0" encoding="UTF-8"?>'
            '<StyledLayerDescriptor version="1.0.0" xmlns="http://www.opengis.net/sld">'
            f"<NamedLayer><Name>{layer}</Name><UserStyle><Name>{layer}_fill</Name><FeatureTypeStyle>"
            f'<Rule><PolygonSymbolizer><Fill><CssParameter name="fill">{colour}</CssParameter></Fill>'
            "</PolygonSymbolizer></Rule></FeatureTypeStyle></UserStyle></NamedLayer>"
            "</StyledLayerDescriptor>")


def rgba(colour: str) -> list[int]:
    return [int(colour[i:i + 2], 16) for i in (1, 3, 5)] + [255]


def wait_execution(client: httpx.Client, exec_id: str, timeout: float = 120.0) -> dict:
    deadline = time.monotonic() + timeout
    record: dict = {}
    while time.monotonic() < deadline:
        response = client.get(f"api/v2/executionrequest/{exec_id}")
        assert response.status_code == 200, response.text
        record = response.json()["request"]
        if record["status"] in ("finished", "failed"):
            return record
        time.sleep(0.1)
    raise AssertionError(f"execution {exec_id} still {record.get('status')} after {timeout}s")


def upload(client: httpx.Client, path: Path, *, sld: str | None = None, **fields: str) -> dict:
    """Upload ``path`` (its only part), wait for the import; the finished execution record."""
    files = {"base_file": (path.name, path.read_bytes(), "application/octet-stream")}
    if sld is not None:
        files["sld_file"] = ("style.sld", sld.encode(), "application/xml")
    response = client.post(UPLOAD_URL, data={"charset": "UTF-8", **fields}, files=files)
    assert response.status_code == 200, response.text
    record = wait_execution(client, response.json()["execution_id"])
    assert record["status"] == "finished", record
    return record


def dataset_named(client: httpx.Client, name: str) -> dict:
    found = client.get("api/v2/datasets", params={"filter{name}": name}).json()["datasets"]
    assert len(found) == 1, found
    return found[0]


def get_map(base: str, alternate: str, headers: dict[str, str] | None = None) -> httpx.Response:
    """A 40 × 20 PNG of MAP_BBOX from the server at ``base`` (WMS 1.1.1, lon/lat order)."""
    params = {"SERVICE": "WMS", "VERSION": "1.1.1", "REQUEST": "GetMap", "LAYERS": alternate,
              "STYLES": "", "SRS": "EPSG:4326", "BBOX": ",".join(map(str, MAP_BBOX)),
              "WIDTH": "40", "HEIGHT": "20", "FORMAT": "image/png", "TRANSPARENT": "TRUE"}
    return httpx.get(f"{base}ows", params=params, headers=headers or {}, timeout=60)


def west_and_east(base: str, alternate: str, headers: dict[str, str] | None = None
                  ) -> tuple[list[int], list[int]]:
    """The RGBA pixels GetMap draws in the middle of the west and of the east square."""
    response = get_map(base, alternate, headers)
    assert response.status_code == 200 and response.headers["content-type"] == "image/png", response.text
    image = pixels(response.content)
    return image[10, 10].tolist(), image[10, 30].tolist()
