"""The pages' maps and the dataset page in Chromium: the offline basemap under the data on the
dataset, map and composer maps, legends, click-to-identify, the metadata panel of a dataset
with ISO metadata, the Download menu (each file read back), the attribute table sorted and
filtered by the server, the composer's per-layer style and saved view, and the pages at phone
width; and the pages' CSP with and without an operator's basemap.

One live server, browser and data set per module and backend.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import numpy as np
import pyogrio
import pytest
import rasterio
import shapely
from playwright.sync_api import expect
from pyproj import Transformer

from cartotheca.db.models import Style
from cartotheca.web.pages import security_headers, tile_source
from tests.catalogue import iso_documents as docs
from tests.conftest import ADMIN_PASSWORD
from tests.factories import PASSWORD, make_user
from tests.geodata.fixtures import (
    POLYGONS,
    POLYGONS_BOUNDS,
    polygons_sld,
    publish_file,
    write_polygons,
    write_raster,
)
from tests.support.edit_menu import choose_edit
from tests.support.pixels import pixels as rgba_pixels
from tests.web.test_composer import navy_sld
from tests.web.test_pages import _axe

TO_3857 = Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True)
# The offline basemap's colours (frontend/src/map.js): sea and land.
OCEAN = (214, 228, 239)
LAND = (242, 239, 230)
SEA_POINT = (-15.0, 45.0)  # the Bay of Biscay, west of the squares
LAND_POINT = (30.0, 50.0)  # near Kyiv, east of the squares, far from any border
COLOURS = {p["name"]: tuple(int(p["color"][i:i + 2], 16) for i in (1, 3, 5)) for p in POLYGONS}
NAVY = (0, 0, 128)
# The page's own elements (the site header is checked with the layout) reaching beyond the
# window's right edge: none may, or the page scrolls sideways.
WIDER_THAN_THE_WINDOW = """() => [...document.querySelectorAll('main, main *')]
  .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1)
  .map((e) => `${e.tagName}#${e.id}.${e.className} ${Math.round(e.getBoundingClientRect().right)}`)
  .slice(0, 10)"""


@pytest.fixture(scope="module")
def data(live_server, api, module_db, base_app, tmp_path_factory):
    settings = base_app.state.cartotheca.settings
    owner = make_user(module_db, "cartographer")
    make_user(module_db, "ana", first_name="Ana", last_name="Lima", email="ana@example.org")
    folder = tmp_path_factory.mktemp("maps")
    squares = publish_file(module_db, settings, owner, write_polygons(folder, "squares"), title="Squares",
                           sld=polygons_sld("squares"))
    # A second style of the dataset, for the composer's style choice.
    module_db.add(Style(dataset_id=squares.id, name="squares_navy", workspace=squares.alternate.split(":")[0],
                        sld_title="Navy", sld_body=navy_sld("squares"), is_default=False))
    module_db.commit()
    iso = {"metadata_file": ("squares.xml", docs.gmd(squares.uuid).encode(), "text/xml")}
    response = api.request("PUT", f"api/v2/datasets/{squares.id}/metadata", files=iso)
    assert response.status_code < 300, response.text
    raster = publish_file(module_db, settings, owner, write_raster(folder, "terrain"), title="Terrain")
    made = api.ok("POST", "api/v2/maps", json={
        "title": "Squares map",
        "maplayers": [{"dataset": squares.id, "order": 0, "opacity": 1.0, "visibility": True}],
    })["map"]
    return {"squares": squares.id, "raster": raster.id, "map": int(made["pk"]), "folder": folder}


def pixel_finder(page, selector: str):
    """lon/lat → (column, row) in the map's screenshot, from the view's extent in data-extent."""
    box = page.locator(selector).bounding_box()
    x0, _, x1, y1 = page.evaluate("(s) => JSON.parse(document.querySelector(s).dataset.extent)", selector)
    resolution = (x1 - x0) / round(box["width"])

    def at(lon: float, lat: float) -> tuple[int, int]:
        x, y = TO_3857.transform(lon, lat)
        return round((x - x0) / resolution), round((y1 - y) / resolution)

    return at


def expect_pixels(page, selector: str, expected: dict[tuple[float, float], tuple[int, int, int]]) -> None:
    """Wait until the map shows each colour (±3) in the 3×3 pixels around each lon/lat."""
    deadline = time.monotonic() + 15
    while True:
        at = pixel_finder(page, selector)
        pixels = rgba_pixels(page.locator(selector).screenshot()).astype(int)
        seen = {}
        for where, colour in expected.items():
            col, row = at(*where)
            seen[where] = (pixels[row - 1:row + 2, col - 1:col + 2, :3].reshape(-1, 3), colour)
        if all((abs(region - np.array(colour)) <= 3).all() for region, colour in seen.values()):
            return
        assert time.monotonic() < deadline, {w: (r[0].tolist(), c) for w, (r, c) in seen.items()}
        time.sleep(0.2)


def settled_extent(page, selector: str, before: str) -> list[float]:
    """The map's extent once it has changed from ``before`` and stopped moving (zooms animate)."""
    deadline = time.monotonic() + 10
    last = before
    while True:
        time.sleep(0.4)
        now = page.evaluate("(s) => document.querySelector(s).dataset.extent", selector)
        if now == last and now != before:
            return json.loads(now)
        assert time.monotonic() < deadline, (before, now)
        last = now


def legend_loaded(page, selector: str) -> None:
    page.wait_for_function(
        "(s) => { const img = document.querySelector(s);"
        " return img && img.complete && img.naturalWidth > 0; }",
        arg=selector)


def test_dataset_map_basemap_legend_identify_and_metadata(live_server, api, data, new_page):
    record = api.ok("GET", f"api/v2/resources/{data['squares']}")["resource"]
    page, watch = new_page()
    page.goto(f"{live_server.url}catalogue/#/dataset/{data['squares']}")
    page.wait_for_selector("#resource-map[data-loaded='true']", state="attached")
    page.wait_for_selector("#resource-map[data-basemap-loaded='true']", state="attached")
    expect(page.get_by_label("Basemap")).to_have_value("countries")
    # Sea and land around the data; the squares' own colours over them.
    expect_pixels(page, "#resource-map", {SEA_POINT: OCEAN, LAND_POINT: LAND, (15, 55): COLOURS["north-east"],
                                          (2, 42): COLOURS["south-west"]})
    # The data does not touch the map's edges: the fit keeps a margin.
    at = pixel_finder(page, "#resource-map")
    box = page.locator("#resource-map").bounding_box()
    top = at(10, 60)[1]
    bottom = at(10, 40)[1]
    assert top >= 20 and box["height"] - bottom >= 20, (top, bottom, box)
    legend_loaded(page, "#resource-map-legend img")
    expect(page.locator("#resource-map-legend img")).to_have_attribute("alt", "Legend of Rivers of the plain")
    # The scale bar and the pointer's coordinates.
    expect(page.locator("#resource-map-scale .ol-scale-line-inner")).to_have_text(re.compile(r"\d+ (km|m)"))
    col, row = at(15, 55)
    page.locator("#resource-map").hover(position={"x": col, "y": row})
    expect(page.locator("#resource-map-coords")).to_contain_text(
        re.compile(r"Pointer at 5[45]\.\d{5}, 1[45]\.\d{5} \("))
    # A click on the north-east square shows its attributes (GetFeatureInfo as JSON).
    page.locator("#resource-map").click(position={"x": col, "y": row})
    panel = page.locator("#resource-map-identify[data-ready='true']")
    expect(panel).to_be_visible()
    expect(panel.locator("tr", has_text="name")).to_contain_text("north-east")
    expect(panel.locator("tr", has_text="rank")).to_contain_text("2")
    expect(panel).not_to_contain_text("south-west")

    # The metadata panel: what the ISO file and the data say.
    meta = page.locator("#resource-metadata")
    terms = dict(zip(meta.locator("dt").all_inner_texts(), meta.locator("dd").all_inner_texts(), strict=True))
    assert terms["Coordinate reference system"] == record["srid"] == "EPSG:4326"
    assert terms["Extent"] == "0°E to 20°E, 40°N to 60°N"
    expect(meta.locator("dd").nth(list(terms).index("Features"))).to_have_text(str(len(POLYGONS)))
    licence = record["license"]
    assert licence and terms["Licence"] in (licence.get("name"), licence["identifier"])
    assert terms["Point of contact"] == "Ana Lima (ana) <ana@example.org>"
    assert terms["Temporal extent"] == "2001-01-01 to 2010-12-31"
    assert terms["Purpose"] == "Flood planning"
    assert "name (" in terms["Attributes"] and "rank (" in terms["Attributes"]
    # The thumbnail does not repeat the map on a dataset page.
    expect(page.locator("#thumbnail-figure")).to_be_hidden()
    # The services, each with a copy button.
    services = page.locator("#service-list .service-url")
    expect(services).to_have_count(4)
    wms = f"{live_server.url}ows?service=WMS&version=1.3.0&request=GetCapabilities"
    assert services.nth(0).input_value() == wms
    assert watch.clean, watch


def _read(path: str, *, geometry: bool = True) -> tuple[dict[str, list], list]:
    """A vector file's attribute columns and geometries, as GDAL reads them."""
    meta, _, wkb, columns = pyogrio.raw.read(path, read_geometry=geometry)
    shapes = list(shapely.from_wkb(wkb)) if geometry else []
    return {name: list(values) for name, values in zip(meta["fields"], columns, strict=True)}, shapes


def _download(page, label: str, folder: Path) -> Path:
    menu = page.locator("#download-menu")
    if menu.get_attribute("open") is None:
        page.get_by_text("Download", exact=True).click()
    with page.expect_download() as info:
        page.locator(f"#download-list a[data-format='{label}']").click()
    download = info.value
    target = folder / f"{label.replace(' ', '-')}-{download.suggested_filename}"
    download.save_as(target)
    return target


def test_download_menu_gives_the_data_in_each_format(live_server, data, new_page, tmp_path):
    page, watch = new_page()
    page.goto(f"{live_server.url}catalogue/#/dataset/{data['squares']}")
    expect(page.locator("#download-menu")).to_be_visible()
    expect(page.locator("#download-list a")).to_have_text(
        ["Zipped shapefile", "GeoJSON", "CSV", "KML", re.compile(r"Original upload")])
    names = sorted(p["name"] for p in POLYGONS)
    shapefile = _download(page, "Zipped shapefile", tmp_path)
    geojson = _download(page, "GeoJSON", tmp_path)
    kml = _download(page, "KML", tmp_path)
    for path in (f"/vsizip/{shapefile}", str(geojson), str(kml)):
        columns, geometries = _read(path)
        assert sorted(columns.get("name") or columns.get("Name") or []) == names, (path, columns)
        assert {g.geom_type for g in geometries} <= {"Polygon", "MultiPolygon"}, path
        assert shapely.union_all(geometries).bounds == pytest.approx(POLYGONS_BOUNDS), path
    assert sorted(_read(str(_download(page, "CSV", tmp_path)), geometry=False)[0]["name"]) == names
    # A raster dataset offers GeoTIFF.
    page.goto(f"{live_server.url}catalogue/#/dataset/{data['raster']}")
    expect(page.locator("#download-list a")).to_have_text(["GeoTIFF", re.compile(r"Original upload")])
    with rasterio.open(_download(page, "GeoTIFF", tmp_path)) as tiff:
        assert (tiff.width, tiff.height, tiff.count) == (64, 48, 1)
        assert tiff.crs is not None
    assert not (watch.dialogs or watch.page_errors), watch


def _column(page, name: str) -> list[str]:
    headers = page.locator("#attribute-table th").all_inner_texts()
    index = [h.strip(" ▲▼") for h in headers].index(name)
    return page.locator(f"#attribute-table tbody td:nth-child({index + 1})").all_inner_texts()


def test_attribute_table_sorts_and_filters_through_the_wfs(live_server, data, new_page):
    page, watch = new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url) if "GetFeature" in r.url else None)
    page.goto(f"{live_server.url}catalogue/#/dataset/{data['squares']}")
    page.wait_for_selector("#attributes[data-ready='true']", state="attached")
    by_rank = [p["name"] for p in sorted(POLYGONS, key=lambda p: p["rank"])]
    page.get_by_role("button", name="rank", exact=True).click()
    expect(page.locator("th[aria-sort='ascending']")).to_have_text("rank")
    expect(page.locator("#attribute-table tbody tr")).to_have_count(len(POLYGONS))
    assert _column(page, "name") == by_rank
    page.get_by_role("button", name="rank", exact=True).click()
    expect(page.locator("th[aria-sort='descending']")).to_have_text("rank")
    expect(page.locator("#attribute-table tbody tr").first).to_contain_text(by_rank[-1])
    assert _column(page, "name") == by_rank[::-1]
    assert any("sortBy=rank+DESC" in url for url in requests), requests
    # A filter: the server answers only the matching rows, still sorted.
    page.get_by_label("Column").select_option("name")
    page.get_by_label("Condition").select_option("contains")
    page.get_by_label("Value").fill("north")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("#attribute-table tbody td:first-child")).to_have_text(["north-east", "north-west"])
    expect(page.locator("#rows-info")).to_have_text("Rows 1–2 of 2")
    assert any("CQL_FILTER=name+ILIKE" in url for url in requests), requests
    page.get_by_label("Column").select_option("rank")
    page.get_by_label("Condition").select_option(">")
    page.get_by_label("Value").fill("3")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("#attribute-table tbody td:first-child")).to_have_text(["centre", "south-east"])
    expect(page.locator("#rows-info")).to_have_text("Rows 1–2 of 2")
    page.get_by_role("button", name="Show all rows").click()
    expect(page.locator("#rows-info")).to_have_text(f"Rows 1–{len(POLYGONS)} of {len(POLYGONS)}")
    assert watch.clean, watch


def test_map_page_shows_the_basemap_and_pages_fit_a_phone(live_server, data, new_page):
    page, watch = new_page(bypass_csp=True)  # for axe
    page.set_viewport_size({"width": 390, "height": 844})
    for path, ready in ((f"catalogue/#/map/{data['map']}", "#map-layers-section[data-ready='true']"),
                        (f"catalogue/#/dataset/{data['squares']}", "#attributes[data-ready='true']"),
                        (f"catalogue/#/dataset/{data['raster']}", "#resource-map[data-loaded='true']")):
        page.goto(f"{live_server.url}{path}")
        page.wait_for_selector(ready, state="attached")
        page.wait_for_selector("#resource-map[data-loaded='true']", state="attached")
        if "map/" in path:
            page.wait_for_selector("#resource-map[data-basemap-loaded='true']", state="attached")
            expect_pixels(page, "#resource-map", {(-4, 45): OCEAN})  # the Bay of Biscay, west of the data
        if "dataset" in path:
            page.get_by_text("Download", exact=True).click()  # the open menu fits too
        assert page.evaluate(WIDER_THAN_THE_WINDOW) == [], path
        assert _axe(page) == [], path
    response = page.request.post(f"{live_server.url}account/login",
                                 data={"username": "cartographer", "password": PASSWORD})
    assert response.ok
    page.goto(f"{live_server.url}maps/new")
    page.wait_for_selector("#composer-page[data-ready='true']", state="attached")
    page.get_by_role("button", name="Add Rivers of the plain").click()  # a layer with all its controls
    expect(page.locator("#layer-list .layer-title")).to_have_text(["Rivers of the plain"])
    assert page.evaluate(WIDER_THAN_THE_WINDOW) == []
    assert _axe(page) == []
    assert not (watch.dialogs or watch.page_errors), watch


def test_composer_keeps_a_style_per_layer_and_the_view(live_server, api, data, new_page):
    page, watch = new_page()
    response = page.request.post(f"{live_server.url}account/login",
                                 data={"username": "admin", "password": ADMIN_PASSWORD})
    assert response.ok, response.text()
    page.goto(f"{live_server.url}maps/{data['map']}/edit")
    page.wait_for_selector("#composer-page[data-ready='true']", state="attached")
    page.wait_for_selector("#composer-map[data-basemap-loaded='true']", state="attached")
    expect_pixels(page, "#composer-map", {SEA_POINT: OCEAN, (15, 55): COLOURS["north-east"]})
    legend_loaded(page, "#composer-map-legend img")
    # The dataset's other style, chosen for this map: navy everywhere, and its legend.
    style = page.get_by_label("Style of Rivers of the plain")
    expect(style.locator("option")).to_have_text(["Squares (default)", "Navy"])
    style.select_option(label="Navy")
    expect_pixels(page, "#composer-map", {(15, 55): NAVY, (2, 42): NAVY})
    legend = page.locator("#composer-map-legend img")
    expect(legend).to_have_attribute("src", re.compile("style=.*squares_navy"))
    legend_loaded(page, "#composer-map-legend img")
    # A view of its own: zoomed in on the north-east square.
    before = page.evaluate("() => document.querySelector('#composer-map').dataset.extent")
    page.locator("#composer-map").focus()
    page.keyboard.press("+")
    zoomed = settled_extent(page, "#composer-map", before)
    page.get_by_role("button", name="Save the changes").click()
    page.wait_for_url(re.compile(re.escape(f"{live_server.url}catalogue/#/map/{data['map']}") + "$"))
    record = api.ok("GET", f"api/v2/maps/{data['map']}")["map"]
    assert [layer["current_style"] for layer in record["maplayers"]] == [
        f"{record['maplayers'][0]['dataset']['alternate'].split(':')[0]}:squares_navy"]
    saved = record["data"]["map"]
    assert saved["center"]["crs"] == "EPSG:4326" and saved["zoom"] > 0
    # The map's page opens on that view, in that style, over the basemap.
    page.wait_for_selector("#resource-map[data-loaded='true']", state="attached")
    shown = page.evaluate("() => JSON.parse(document.querySelector('#resource-map').dataset.extent)")
    width = zoomed[2] - zoomed[0]
    assert abs((shown[0] + shown[2]) / 2 - (zoomed[0] + zoomed[2]) / 2) < width * 0.01, (shown, zoomed)
    expect_pixels(page, "#resource-map", {(15, 55): NAVY})
    # And the composer opens on it again, with the style chosen.
    page.goto(f"{live_server.url}maps/{data['map']}/edit")
    page.wait_for_selector("#composer-page[data-ready='true']", state="attached")
    expect(page.get_by_label("Style of Rivers of the plain")).to_have_value(re.compile("squares_navy$"))
    page.wait_for_selector("#composer-map[data-rendered='true']", state="attached")
    reopened = page.evaluate("() => JSON.parse(document.querySelector('#composer-map').dataset.extent)")
    centre = (zoomed[0] + zoomed[2]) / 2
    assert abs((reopened[0] + reopened[2]) / 2 - centre) < width * 0.01, (reopened, zoomed)
    assert abs((reopened[2] - reopened[0]) - width) < width * 0.01, (reopened, zoomed)
    assert not (watch.dialogs or watch.page_errors), watch


def test_csp_allows_the_operator_basemap_host_only_when_set(make_settings):
    plain = security_headers(make_settings())["Content-Security-Policy"]
    assert "img-src 'self' data: blob:;" in plain
    assert "http" not in plain
    tiles = make_settings(WEB_BASEMAP_URL="https://tiles.example.org/base/{z}/{x}/{y}.png",
                          WEB_BASEMAP_ATTRIBUTION="© Example")
    assert "img-src 'self' data: blob: https://tiles.example.org;" in \
        security_headers(tiles)["Content-Security-Policy"]
    assert tile_source("https://{a-c}.tile.example.org/{z}/{x}/{y}.png") == "https://*.tile.example.org"
    with pytest.raises(ValueError, match="WEB_BASEMAP_URL"):
        make_settings(WEB_BASEMAP_URL="javascript:alert(1)//{z}/{x}/{y}")
    with pytest.raises(ValueError, match="WEB_BASEMAP_URL"):
        make_settings(WEB_BASEMAP_URL="https://tiles.example.org/tile.png")


def test_metadata_form_edits_category_licence_dates_purpose_and_contacts(live_server, api, data, new_page):
    page, watch = new_page()
    response = page.request.post(f"{live_server.url}account/login",
                                 data={"username": "admin", "password": ADMIN_PASSWORD})
    assert response.ok, response.text()
    page.goto(f"{live_server.url}catalogue/#/dataset/{data['raster']}")
    page.wait_for_selector("#resource-view[data-ready='true']", state="attached")
    choose_edit(page, "Metadata")
    expect(page.locator("#edit-section")).to_be_visible()
    category = page.get_by_label("Category")
    expect(category.locator("option")).not_to_have_count(1)  # the categories came from the API
    category.select_option(index=1)
    chosen_category = category.input_value()
    # The licence the ISO file gave the squares, by its identifier.
    chosen_licence = api.ok("GET", f"api/v2/resources/{data['squares']}")["resource"]["license"]["identifier"]
    page.get_by_label("Licence (its identifier, such as CC-BY-4.0)").fill(chosen_licence)
    page.get_by_label("Temporal extent from").fill("2015-03-01")
    page.get_by_label("Temporal extent to").fill("2016-02-29")
    page.get_by_label("Purpose").fill("Terrain analysis")
    page.get_by_label("Other constraints").fill("Cite the survey.")
    page.get_by_label("Attribution").fill("Survey office")
    page.get_by_label("Points of contact").fill("ana")
    page.get_by_role("button", name="Save the metadata").click()
    page.wait_for_selector("#edit-section[data-saved='true']", state="attached")
    record = api.ok("GET", f"api/v2/resources/{data['raster']}")["resource"]
    assert record["category"]["identifier"] == chosen_category
    assert record["license"]["identifier"] == chosen_licence
    temporal = (record["temporal_extent_start"][:10], record["temporal_extent_end"][:10])
    assert temporal == ("2015-03-01", "2016-02-29")
    assert (record["purpose"], record["constraints_other"], record["attribution"]) == \
        ("Terrain analysis", "Cite the survey.", "Survey office")
    assert [user["username"] for user in record["poc"]] == ["ana"]
    # The page shows them back, and a bad contact is refused in words.
    meta = page.locator("#resource-metadata")
    expect(meta).to_contain_text("Terrain analysis")
    expect(meta).to_contain_text("Ana Lima (ana)")
    page.get_by_label("Points of contact").fill("nobody-such")
    page.get_by_role("button", name="Save the metadata").click()
    expect(page.locator("#edit-error")).to_contain_text("Not saved: poc: unknown user")
    expect(page.locator("#edit-poc-error")).to_contain_text("unknown user nobody-such")
    expect(page.get_by_label("Points of contact")).to_be_focused()
    assert not (watch.dialogs or watch.page_errors), watch
