"""The pages' layout in Chromium at a phone's width (390 × 844) and a laptop's (1280 × 800):
no page scrolls sideways and axe finds no serious or critical violation, anonymous and signed
in; the header's menu and the catalogue's filter panel open and close from the keyboard; the
catalogue's card grid and its results map; and shapes crossing the antimeridian (countries,
footprints) drawn without a line across the map.

The layout does not depend on the database: the module runs on the first backend only.
"""

from __future__ import annotations

import copy
import json
import re

import numpy as np
import pytest
from playwright.sync_api import expect

from cartotheca.web.pages import STATIC_DIR
from tests.api.routes.document_samples import samples
from tests.conftest import ADMIN_PASSWORD, BACKENDS
from tests.factories import make_resource, make_user
from tests.geodata.fixtures import polygons_sld, publish_file, write_polygons
from tests.support.pixels import pixels as rgba_pixels
from tests.web.conftest import TIMEOUT_MS
from tests.web.test_pages import _axe

pytestmark = pytest.mark.usefixtures("chromium_path")

VIEWPORTS = {"phone": (390, 844), "laptop": (1280, 800)}
# Footprints placed off the band of latitude -15° but the one crossing the antimeridian.
EXTENTS = {
    "Alpine glaciers": (6.0, 45.5, 14.0, 48.0),
    "Boreal forest plots": (-120.0, 50.0, -90.0, 60.0),
    "Coastal tide gauges": (130.0, 30.0, 145.0, 45.0),
    "Atoll reef survey": (170.0, -20.0, 190.0, -10.0),  # from a Pacific CRS: past 180°
}


@pytest.fixture(scope="module", autouse=True)
def first_backend_only(backend):
    if backend != BACKENDS[0]:
        pytest.skip("the pages' layout does not depend on the database")


@pytest.fixture(scope="module")
def site(live_server, api, module_db, base_app, tmp_path_factory):
    settings = base_app.state.cartotheca.settings
    owner = make_user(module_db, "fieldworker")
    polygons = publish_file(module_db, settings, owner, write_polygons(tmp_path_factory.mktemp("layout")),
                            title="Administrative polygons", sld=polygons_sld())
    made = {title: make_resource(module_db, settings, owner, title, extent=extent, category="environment",
                                 abstract="Observed every season since the first campaign.").id
            for title, extent in EXTENTS.items()}
    made["raster"] = make_resource(module_db, settings, owner, "Elevation model", subtype="raster").id
    made["geoapp"] = make_resource(module_db, settings, owner, "Flood dashboard", resource_type="geoapp").id
    for n in (1, 2):
        make_resource(module_db, settings, owner, f"Field notebook {n}", resource_type="document",
                      category="location")
    # A word longer than any phone is wide: it must break rather than widen the page.
    make_resource(module_db, settings, owner, "Gauging" + "station" * 20, abstract="x" * 300)
    module_db.commit()
    files = {"doc_file": ("report.pdf", samples()["pdf"], "application/pdf")}
    answer = api.request("POST", "api/v2/documents", files=files, data={"title": "Campaign report"})
    assert answer.status_code in (200, 201), answer.text
    document = int(answer.json()["document"]["pk"])
    layers = [{"dataset": polygons.id, "order": 0, "opacity": 1.0, "visibility": True}]
    city_map = api.ok("POST", "api/v2/maps", json={"title": "Polygons map", "maplayers": layers})["map"]
    return {"dataset": polygons.id, "document": document, "map": int(city_map["pk"]), **made}


def pages(site) -> dict[str, str]:
    """Every page the router serves (the resource pages are routed by the catalogue's script)."""
    return {
        "catalogue": "",
        "dataset": f"catalogue/#/dataset/{site['dataset']}",
        "document": f"catalogue/#/document/{site['document']}",
        "map": f"catalogue/#/map/{site['map']}",
        "composer": "maps/new",
        "map editor": f"maps/{site['map']}/edit",
        "upload": "upload",
        "dashboard": "monitoring/",
        "login": "account/login",
        "logout": "account/logout",
        "signup": "account/signup",
        "profile": "account/profile",
        "applications": "account/applications",
    }


def open_context(browser, live_server, viewport: str, signed_in: bool):
    width, height = VIEWPORTS[viewport]
    # axe is injected as an inline script, which the pages' CSP forbids: the context bypasses it.
    context = browser.new_context(viewport={"width": width, "height": height}, bypass_csp=True)
    context.set_default_timeout(TIMEOUT_MS)
    if signed_in:
        answer = context.request.post(f"{live_server.url}account/login",
                                      data={"username": "admin", "password": ADMIN_PASSWORD})
        assert answer.ok, answer.text()
    return context


def wait_catalogue(page) -> None:
    page.wait_for_selector("#results[data-ready='true']", state="attached")
    page.wait_for_selector("#facet-groups[data-ready='true']", state="attached")


def settle(page, path: str) -> None:
    if path.startswith("catalogue/#/"):
        page.wait_for_function("document.getElementById('resource-title').textContent.trim() !== ''")
    elif path == "":
        wait_catalogue(page)
    page.wait_for_load_state("networkidle")


@pytest.mark.parametrize("signed_in", [False, True], ids=["anonymous", "signed-in"])
@pytest.mark.parametrize("viewport", list(VIEWPORTS))
def test_no_page_scrolls_sideways_and_axe_finds_nothing_serious(live_server, site, browser, viewport,
                                                                   signed_in):
    context = open_context(browser, live_server, viewport, signed_in)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    overflowing, violations = {}, {}
    for name, path in pages(site).items():
        # A fresh document each time: the resource pages differ from the catalogue by their hash.
        page.goto("about:blank")
        page.goto(f"{live_server.url}{path}")
        settle(page, path)
        if signed_in:
            expect(page.locator("#logout-link")).to_be_attached()
        widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        if widths[0] > widths[1]:
            overflowing[name] = widths
        found = _axe(page)
        if found:
            violations[name] = found
    context.close()
    assert overflowing == {}, overflowing
    assert violations == {}, violations
    assert errors == []


def test_header_menu_from_the_keyboard(live_server, site, browser):
    context = open_context(browser, live_server, "phone", signed_in=True)
    page = context.new_page()
    page.goto(f"{live_server.url}upload")
    menu = page.get_by_role("button", name="Menu")
    log_out = page.locator("#logout-link")
    expect(log_out).to_be_attached()
    expect(menu).to_have_attribute("aria-expanded", "false")
    expect(log_out).to_be_hidden()
    menu.focus()
    page.keyboard.press("Enter")
    expect(menu).to_have_attribute("aria-expanded", "true")
    expect(log_out).to_be_visible()
    expect(page.locator("#staff-nav")).to_be_visible()
    box = log_out.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    page.keyboard.press("Tab")
    expect(page.locator("#site-nav a").first).to_be_focused()
    page.keyboard.press("Escape")
    expect(menu).to_have_attribute("aria-expanded", "false")
    expect(menu).to_be_focused()
    expect(log_out).to_be_hidden()
    page.keyboard.press("Space")
    expect(menu).to_have_attribute("aria-expanded", "true")
    page.keyboard.press("Space")
    expect(menu).to_have_attribute("aria-expanded", "false")
    context.close()

    # On a laptop the links show and the menu button does not.
    context = open_context(browser, live_server, "laptop", signed_in=True)
    page = context.new_page()
    page.goto(f"{live_server.url}upload")
    expect(page.locator("#logout-link")).to_be_visible()
    expect(page.get_by_role("button", name="Menu")).to_be_hidden()
    context.close()


def test_filter_panel_folds_on_a_phone_and_opens_from_the_keyboard(live_server, site, browser):
    context = open_context(browser, live_server, "phone", signed_in=False)
    page = context.new_page()
    page.goto(live_server.url)
    wait_catalogue(page)
    toggle = page.locator("#filters-toggle")
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(page.locator("#filter-panel")).to_be_hidden()
    # Folded, the filters take no room: the first result shows on the first screen.
    assert page.locator("#results .card").first.bounding_box()["y"] < 844
    toggle.focus()
    page.keyboard.press("Enter")
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(page.locator("[data-facet='type']")).to_be_visible()
    # The area map, first laid out folded, draws the whole world once shown.
    area = page.locator("#area-map canvas").first
    expect(area).to_be_visible()
    assert area.bounding_box()["width"] > 300
    page.get_by_role("button", name="Use the map's view").click()
    page.wait_for_function("new URLSearchParams(location.search).has('extent')")
    west, _, east, _ = (float(v) for v in page.evaluate(
        "new URLSearchParams(location.search).get('extent')").split(","))
    assert west <= -170 and east >= 170
    wait_catalogue(page)
    toggle.focus()
    page.keyboard.press("Space")
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(page.locator("#filter-panel")).to_be_hidden()
    context.close()

    context = open_context(browser, live_server, "laptop", signed_in=False)
    page = context.new_page()
    page.goto(live_server.url)
    wait_catalogue(page)
    expect(page.locator("#filters-toggle")).to_have_attribute("aria-expanded", "true")
    expect(page.locator("#filter-panel")).to_be_visible()
    context.close()


def map_pixel(size: tuple[int, int], lon: float, lat: float) -> tuple[int, int]:
    """Row and column of a lon/lat on a map image showing the whole world fitted (EPSG:4326)."""
    width, height = size
    resolution = max(360 / width, 180 / height)
    return int(height / 2 - lat / resolution), int(width / 2 + lon / resolution)


def map_image(page, selector: str) -> np.ndarray:
    """The map's drawing, without its zoom buttons."""
    page.add_style_tag(content=f"{selector} .ol-control {{ visibility: hidden; }}")
    page.wait_for_timeout(300)  # the last render of a change reaches the canvas on the next frame
    return rgba_pixels(page.locator(f"{selector} .ol-viewport").screenshot())


def footprint_coloured(rgb) -> bool:
    """The footprints' orange over white or a country's grey-blue: red well above blue."""
    red, _, blue = (int(c) for c in rgb[:3])
    return red - blue > 20


def test_catalogue_grid_cards_and_results_map(live_server, site, browser):
    context = open_context(browser, live_server, "laptop", signed_in=False)
    page = context.new_page()
    page.goto(f"{live_server.url}?sort=title")
    wait_catalogue(page)
    cards = page.locator("#results .card")
    # Sorted by title, the first page holds every kind and the footprints of the tests below.
    expect(cards).to_have_count(10)
    visible = page.evaluate("""() => [...document.querySelectorAll('#results .card')].filter((card) => {
        const box = card.getBoundingClientRect();
        return box.top >= 0 && box.bottom <= innerHeight && box.right <= innerWidth; }).length""")
    assert visible >= 9, visible
    for index in range(9):
        card = cards.nth(index)
        expect(card.locator(".card-owner")).to_have_text(re.compile(r"^Owner: (fieldworker|admin)$"))
        expect(card.locator(".card-owner")).to_be_visible()
        expect(card.locator(".card-date")).to_be_visible()
        expect(card.locator(".kind")).to_be_visible()
    by_title = {title: page.locator("#results .card", has=page.get_by_role("link", name=title, exact=True))
                for title in ("Alpine glaciers", "Elevation model", "Flood dashboard", "Campaign report")}
    expect(by_title["Alpine glaciers"].locator(".kind")).to_have_text("dataset")
    expect(by_title["Alpine glaciers"].locator(".card-category")).to_have_text("Category: Environment")
    expect(by_title["Alpine glaciers"].locator(".card-date")).to_have_attribute(
        "datetime", re.compile(r"^\d{4}-\d\d-\d\dT"))
    # Without a thumbnail, a drawing of the kind of resource.
    expect(by_title["Elevation model"].locator(".placeholder")).to_have_attribute("data-kind", "raster")
    expect(by_title["Flood dashboard"].locator(".placeholder")).to_have_attribute("data-kind", "geoapp")
    expect(by_title["Alpine glaciers"].locator(".placeholder")).to_have_attribute("data-kind", "vector")
    drawing = by_title["Flood dashboard"].locator(".placeholder")
    expect(drawing).to_be_visible()
    picture = drawing.evaluate("(node) => getComputedStyle(node).backgroundImage")
    assert picture.startswith('url("data:image/svg+xml'), picture
    expect(by_title["Campaign report"].locator(".kind")).to_have_text("document")

    # The results map: one footprint per result with an extent of its own on this page.
    results_map = page.locator("#results-map")
    with_extent = page.evaluate("""async () => {
        const answer = await fetch('api/v2/resources?sort[]=title&page_size=10&total=false');
        const whole = [-180, -90, 180, 90];
        return (await answer.json()).resources.filter((r) =>
            r.extent && r.extent.coords.some((v, i) => v !== whole[i])).length; }""")
    assert with_extent >= 5  # the four boxes and the published polygons
    expect(results_map).to_have_attribute("data-footprints", str(with_extent))

    image = map_image(page, "#results-map")
    size = (image.shape[1], image.shape[0])
    alps = map_pixel(size, 10, 46.75)
    # The footprint box in the Alps is drawn in its colour, and the Pacific reef's on both edges.
    assert footprint_coloured(image[alps]), image[alps]
    assert footprint_coloured(image[map_pixel(size, 175, -15)])
    assert footprint_coloured(image[map_pixel(size, -175, -15)])
    # ... and nothing between: no edge of it runs across the map.
    row, west = map_pixel(size, -165, -15)
    _, east = map_pixel(size, 165, -15)
    assert not any(footprint_coloured(p) for p in image[row, west:east]), "a footprint line crosses the map"

    # Focusing a card lights its footprint up; pointing at a footprint lights its card up.
    boreal = page.locator("#results .card", has=page.get_by_role("link", name="Boreal forest plots"))
    inside = map_pixel(size, -105, 55)
    assert footprint_coloured(image[inside]), image[inside]
    boreal.get_by_role("link").focus()
    expect(results_map).to_have_attribute("data-highlighted", str(site["Boreal forest plots"]))
    expect(boreal).to_have_class("card highlighted")
    lit, unlit = map_image(page, "#results-map")[inside], image[inside]
    assert int(lit[0]) - int(lit[2]) > int(unlit[0]) - int(unlit[2]) + 20, (lit, unlit)
    page.locator("#search-input").focus()
    expect(results_map).to_have_attribute("data-highlighted", "")
    box = page.locator("#results-map .ol-viewport").bounding_box()
    row, col = map_pixel((box["width"], box["height"]), 135, 38)  # the tide gauges off Japan
    page.mouse.move(box["x"] + col, box["y"] + row)
    tides = page.locator("#results .card", has=page.get_by_role("link", name="Coastal tide gauges"))
    expect(tides).to_have_class("card highlighted")
    expect(results_map).to_have_attribute("data-highlighted", str(site["Coastal tide gauges"]))
    context.close()


def countries_of(names: set[str]) -> bytes:
    """The base map's TopoJSON with only the countries ``names`` (the same arcs)."""
    topology = json.loads((STATIC_DIR / "world-110m.json").read_text())
    trimmed = copy.deepcopy(topology)
    trimmed["objects"] = {"countries": dict(topology["objects"]["countries"], geometries=[
        g for g in topology["objects"]["countries"]["geometries"] if g["properties"]["name"] in names])}
    assert len(trimmed["objects"]["countries"]["geometries"]) == len(names)
    return json.dumps(trimmed).encode()


def blank(rgb) -> bool:
    return all(int(c) >= 250 for c in rgb[:3])


def test_countries_crossing_the_antimeridian_draw_no_line_across_the_area_map(live_server, site, browser):
    context = open_context(browser, live_server, "laptop", signed_in=False)
    page = context.new_page()
    only = countries_of({"Russia", "Fiji"})
    page.route(re.compile(r".*/world-110m\.json(\?.*)?$"),
               lambda route: route.fulfill(body=only, content_type="application/json"))
    page.goto(live_server.url)
    wait_catalogue(page)
    page.wait_for_function("document.querySelector('#area-map canvas') !== null")
    image = map_image(page, "#area-map")
    size = (image.shape[1], image.shape[0])
    # Russia is drawn, both its main part and Chukotka east of 180°, where it wraps to the west edge.
    assert not blank(image[map_pixel(size, 100, 62)])
    assert not blank(image[map_pixel(size, -175, 66.5)])
    # Between the two there is nothing at Russia's and Fiji's latitudes: no edge joins ±180.
    for lat, west, east in ((69.0, -165, 20), (66.0, -165, 20), (-16.3, -170, 170), (-16.7, -170, 170)):
        row, first = map_pixel(size, west, lat)
        _, last = map_pixel(size, east, lat)
        stray = [c for c in range(first, last) if not blank(image[row, c])]
        assert stray == [], (lat, stray[:10])
    context.close()
