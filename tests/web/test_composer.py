"""The map composer in Chromium: an anonymous visitor is asked to log in; a user logs in through
the form, adds two published datasets as layers, reorders them, sets opacity and visibility
(checked in the live preview's pixels) and saves the map through the public maps API; an
existing map is edited (its layer rows kept); the API's refusals are shown in words; axe-core
finds nothing serious and every control works from the keyboard.

One live server, browser and data set per module and backend (startup dominates the run time).
"""

from __future__ import annotations

import re
import time

import numpy as np
import pytest
from playwright.sync_api import expect
from pyproj import Transformer

from tests.conftest import ADMIN_PASSWORD
from tests.factories import PASSWORD, make_user
from tests.geodata.fixtures import POLYGONS, polygons_sld, publish_file, write_polygons
from tests.support.pixels import pixels as rgba_pixels
from tests.web.test_pages import _axe

pytestmark = pytest.mark.usefixtures("chromium_path")

NAVY = (0, 0, 128)
WHITE = (255, 255, 255)
# A point inside each of the squares' quarters (lon, lat), and one east of every square.
PROBES = {"north-west": (2, 58), "north-east": (18, 58), "south-east": (18, 42)}
OUTSIDE = (26, 50)
COLOURS = {p["name"]: tuple(int(p["color"][i:i + 2], 16) for i in (1, 3, 5)) for p in POLYGONS}
TO_3857 = Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True)


def navy_sld(layer: str) -> str:
    """Every polygon filled navy: unlike the coloured squares, one colour wherever it draws."""
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<StyledLayerDescriptor version="1.0.0" xmlns="http://www.opengis.net/sld" '
        'xmlns:ogc="http://www.opengis.net/ogc">'
        f"<NamedLayer><Name>{layer}</Name><UserStyle><Name>{layer}_navy</Name><FeatureTypeStyle>"
        '<Rule><PolygonSymbolizer><Fill><CssParameter name="fill">#000080</CssParameter></Fill>'
        "</PolygonSymbolizer></Rule></FeatureTypeStyle></UserStyle></NamedLayer>"
        "</StyledLayerDescriptor>"
    )


@pytest.fixture(scope="module")
def data(live_server, module_db, base_app, tmp_path_factory):
    settings = base_app.state.cartotheca.settings
    owner = make_user(module_db, "surveyor")
    make_user(module_db, "mapper")
    folder = tmp_path_factory.mktemp("composer")
    coloured = publish_file(module_db, settings, owner, write_polygons(folder, "coloured"),
                            title="Coloured squares", sld=polygons_sld("coloured"))
    navy = publish_file(module_db, settings, owner, write_polygons(folder, "navy"),
                        title="Navy squares", sld=navy_sld("navy"))
    return {"coloured": coloured.id, "navy": navy.id, "folder": folder}


def expect_colours(page, selector: str, ready: str, expected: dict[tuple[float, float], tuple]) -> None:
    """Wait until the map in ``selector`` shows each expected colour (±3) around each lon/lat,
    finding the pixels from the view's extent the page publishes in ``data-extent``."""
    deadline = time.monotonic() + 15
    while True:
        page.wait_for_selector(f"{selector}[{ready}]", state="attached")
        extent = page.evaluate("(s) => JSON.parse(document.querySelector(s).dataset.extent)", selector)
        pixels = rgba_pixels(page.locator(selector).screenshot()).astype(int)
        x0, _, x1, y1 = extent
        resolution = (x1 - x0) / pixels.shape[1]
        seen = {}
        for (lon, lat), colour in expected.items():
            x, y = TO_3857.transform(lon, lat)
            col, row = round((x - x0) / resolution), round((y1 - y) / resolution)
            region = pixels[row - 1:row + 2, col - 1:col + 2, :3].reshape(-1, 3)
            seen[(lon, lat)] = (region, colour)
        if all((abs(region - np.array(colour)) <= 3).all() for region, colour in seen.values()):
            return
        assert time.monotonic() < deadline, {k: (r[0].tolist(), c) for k, (r, c) in seen.items()}
        time.sleep(0.2)


def layer_titles(page) -> list[str]:
    return page.locator("#layer-list .layer-title").all_inner_texts()


def open_composer(page, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("#composer-page[data-ready='true']", state="attached")


def log_in(page, live_server, username: str, password: str, path: str) -> None:
    """A cookie session as the login page opens it (the form itself is driven once, below)."""
    response = page.request.post(f"{live_server.url}account/login",
                                 data={"username": username, "password": password})
    assert response.ok, response.text()
    page.goto(f"{live_server.url}{path}")
    expect(page.locator("#account-nav")).to_contain_text(f"Signed in as {username}")


def add(page, title: str) -> None:
    page.get_by_label("Search datasets").fill(title)
    page.get_by_label("Search datasets").press("Enter")
    button = page.get_by_role("button", name=f"Add {title}", exact=True)
    button.click()


def test_compose_reorder_style_and_save_a_map(live_server, api, data, new_page):
    page, watch = new_page()
    # Anonymous: the page asks to log in, and the login form sends the user back here.
    open_composer(page, f"{live_server.url}maps/new")
    expect(page.locator("#composer-login")).to_be_visible()
    expect(page.locator("#composer")).to_be_hidden()
    page.get_by_role("link", name="log in", exact=True).click()
    page.get_by_label("Username").fill("mapper")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}maps/new")
    page.wait_for_selector("#composer-page[data-ready='true']", state="attached")
    expect(page.locator("#composer")).to_be_visible()
    expect(page.locator("#account-nav")).to_contain_text("Signed in as mapper")

    # Without a search every dataset is offered, by title.
    expect(page.locator("#dataset-results .result-title")).to_have_text(["Coloured squares", "Navy squares"])
    add(page, "Coloured squares")
    expect(page.locator("#dataset-results .result-title")).to_have_text(["Coloured squares"])
    added = page.get_by_role("button", name="Added Coloured squares")
    expect(added).to_have_attribute("aria-disabled", "true")
    add(page, "Navy squares")
    assert layer_titles(page) == ["Navy squares", "Coloured squares"]  # the newest on top
    page.get_by_label("Basemap").select_option("none")  # the layers over white (basemap: test_maps)
    everything = {**{PROBES[n]: NAVY for n in PROBES}, OUTSIDE: WHITE}
    expect_colours(page, "#composer-map", "data-rendered", everything)

    # Coloured squares moved on top: their colours cover the navy.
    page.get_by_role("button", name="Move up Coloured squares").click()
    assert layer_titles(page) == ["Coloured squares", "Navy squares"]
    expect_colours(page, "#composer-map", "data-rendered",
                   {**{lonlat: COLOURS[name] for name, lonlat in PROBES.items()}, OUTSIDE: WHITE})

    # Hidden on top, the navy at half opacity over white shows through.
    page.get_by_label("Visible Coloured squares").uncheck()
    page.get_by_label("Opacity of Navy squares").fill("50")
    expect(page.locator(".layer-item[data-layer$='navy'] output")).to_have_text("50 %")
    half_navy = tuple((c + 255) / 2 for c in NAVY)
    expect_colours(page, "#composer-map", "data-rendered",
                   {**{lonlat: half_navy for lonlat in PROBES.values()}, OUTSIDE: WHITE})

    page.get_by_label("Title", exact=True).fill("Squares over navy")
    page.get_by_label("Abstract", exact=True).fill("Composed in the browser.")
    page.get_by_role("button", name="Save the map").click()
    page.wait_for_url(re.compile(re.escape(f"{live_server.url}catalogue/#/map/") + r"\d+$"))
    map_id = int(page.url.rsplit("/", 1)[1])

    record = api.ok("GET", f"api/v2/maps/{map_id}")["map"]
    assert record["detail_url"] == page.url
    assert (record["title"], record["abstract"]) == ("Squares over navy", "Composed in the browser.")
    assert record["owner"]["username"] == "mapper"
    stored = [(layer["dataset"]["pk"], layer["opacity"], layer["visibility"])
              for layer in sorted(record["maplayers"], key=lambda layer: layer["order"])]
    assert stored == [(data["navy"], 0.5, True), (data["coloured"], 1.0, False)]  # bottom first

    # The map's page lists and draws the layers in that order; its owner may edit it.
    page.wait_for_selector("#map-layers-section[data-ready='true']", state="attached")
    expect(page.locator("#map-layers li")).to_have_text(
        ["Navy squares · opacity 50 %", "Coloured squares · opacity 100 % · hidden"])
    page.get_by_label("Basemap").select_option("none")
    expect_colours(page, "#resource-map", "data-loaded='true'",
                   {lonlat: half_navy for lonlat in PROBES.values()})
    expect(page.get_by_role("link", name="Edit map")).to_have_attribute("href", f"/maps/{map_id}/edit")
    assert watch.clean, watch


def test_edit_an_existing_map_keeps_its_layer_rows(live_server, api, data, new_page):
    layers = [{"dataset": data["coloured"], "order": 0, "opacity": 0.8, "visibility": True},
              {"dataset": data["navy"], "order": 1, "opacity": 0.3, "visibility": False}]
    made = api.ok("POST", "api/v2/maps", json={"title": "Admin's squares", "abstract": "Before.",
                                               "maplayers": layers})["map"]
    map_id = int(made["pk"])
    rows = {layer["dataset"]["pk"]: layer["pk"] for layer in made["maplayers"]}

    # Someone who may only view it gets neither the link nor the controls.
    page, _ = new_page()
    log_in(page, live_server, "mapper", PASSWORD, f"catalogue/#/map/{map_id}")
    page.wait_for_selector("#map-layers-section[data-ready='true']", state="attached")
    expect(page.locator("#resource-title")).to_have_text("Admin's squares")
    expect(page.get_by_role("link", name="Edit map")).to_have_count(0)
    open_composer(page, f"{live_server.url}maps/{map_id}/edit")
    expect(page.get_by_role("alert").filter(has_text="not change it")).to_be_visible()
    expect(page.locator("#composer")).to_be_hidden()

    admin, watch = new_page(bypass_csp=True)  # for axe
    log_in(admin, live_server, "admin", ADMIN_PASSWORD, f"catalogue/#/map/{map_id}")
    admin.get_by_role("link", name="Edit map").click()
    admin.wait_for_url(f"{live_server.url}maps/{map_id}/edit")
    admin.wait_for_selector("#composer-page[data-ready='true']", state="attached")
    assert layer_titles(admin) == ["Navy squares", "Coloured squares"]
    expect(admin.get_by_label("Title", exact=True)).to_have_value("Admin's squares")
    expect(admin.get_by_label("Abstract", exact=True)).to_have_value("Before.")
    expect(admin.get_by_label("Opacity of Navy squares")).to_have_value("30")
    expect(admin.get_by_label("Visible Navy squares")).not_to_be_checked()
    expect(admin.get_by_label("Opacity of Coloured squares")).to_have_value("80")
    expect(admin.get_by_label("Visible Coloured squares")).to_be_checked()
    # Datasets already in the map are offered as added.
    expect(admin.get_by_role("button", name="Added Navy squares")).to_have_attribute("aria-disabled", "true")
    assert _axe(admin) == []

    admin.get_by_role("button", name="Move down Navy squares").click()
    admin.get_by_label("Visible Navy squares").check()
    admin.get_by_label("Title", exact=True).fill("Admin's squares, edited")
    admin.get_by_role("button", name="Save the changes").click()
    admin.wait_for_url(f"{live_server.url}catalogue/#/map/{map_id}")
    admin.wait_for_selector("#map-layers-section[data-ready='true']", state="attached")
    expect(admin.locator("#map-layers li")).to_have_text(
        ["Navy squares · opacity 30 %", "Coloured squares · opacity 80 %"])

    record = api.ok("GET", f"api/v2/maps/{map_id}")["map"]
    assert (record["title"], record["abstract"]) == ("Admin's squares, edited", "Before.")
    stored = [(layer["pk"], layer["dataset"]["pk"], layer["opacity"], layer["visibility"])
              for layer in sorted(record["maplayers"], key=lambda layer: layer["order"])]
    assert stored == [(rows[data["navy"]], data["navy"], 0.3, True),
                      (rows[data["coloured"]], data["coloured"], 0.8, True)]
    assert watch.clean, watch


def test_refusals_are_shown_in_words(live_server, api, data, module_db, base_app, new_page):
    settings = base_app.state.cartotheca.settings
    owner = make_user(module_db, "fleeting")
    doomed = publish_file(module_db, settings, owner, write_polygons(data["folder"], "doomed"),
                          title="Doomed squares")
    page, _ = new_page()
    log_in(page, live_server, "mapper", PASSWORD, "maps/new")
    page.wait_for_selector("#composer-page[data-ready='true']", state="attached")
    add(page, "Coloured squares")
    add(page, "Doomed squares")
    page.get_by_label("Title", exact=True).fill("   ")
    page.get_by_role("button", name="Save the map").click()
    expect(page.get_by_role("alert").filter(has_text="title")).to_have_text(
        "Give the map a title before saving it.")
    expect(page.get_by_label("Title", exact=True)).to_be_focused()

    # The dataset goes away while the map is being composed: the API refuses the layer.
    api.ok("DELETE", f"api/v2/resources/{doomed.id}")
    before = api.ok("GET", "api/v2/maps?page_size=100")["total"]
    page.get_by_label("Title", exact=True).fill("Never saved")
    page.get_by_role("button", name="Save the map").click()
    alert = page.locator("#save-error")
    expect(alert).to_be_visible()
    expect(alert).to_have_attribute("role", "alert")
    expect(alert).to_contain_text("The map was not saved. The layer “Doomed squares”: no dataset")
    assert "maplayers[" not in alert.inner_text()
    assert page.url == f"{live_server.url}maps/new"
    assert api.ok("GET", "api/v2/maps?page_size=100")["total"] == before

    # A map that does not exist is said to be unavailable.
    open_composer(page, f"{live_server.url}maps/999999/edit")
    expect(page.get_by_role("alert").filter(has_text="map")).to_have_text(
        "This map does not exist or you may not see it.")


def focused_name(page) -> str:
    """The focused control's label (or text), spaces collapsed: what a screen reader names it."""
    return page.evaluate("""() => {
      const node = document.activeElement;
      const label = node.labels && node.labels.length ? node.labels[0].textContent : node.textContent;
      return (label || node.id || node.tagName).replace(/\\s+/g, ' ').trim(); }""")


def test_composer_is_accessible_and_works_from_the_keyboard(live_server, data, new_page):
    # axe is injected as an inline script, which the pages' CSP forbids: this context bypasses it.
    page, watch = new_page(bypass_csp=True)
    open_composer(page, f"{live_server.url}maps/new")
    expect(page.locator("#composer-login")).to_be_visible()
    expect(page.locator("#composer-login-link")).to_have_attribute("href", "/account/login?next=/maps/new")
    assert _axe(page) == []
    open_composer(page, f"{live_server.url}maps/12/edit")
    expect(page.locator("#composer-login-link")).to_have_attribute(
        "href", "/account/login?next=/maps/12/edit")

    log_in(page, live_server, "mapper", PASSWORD, "maps/new")
    page.wait_for_selector("#composer-page[data-ready='true']", state="attached")
    assert _axe(page) == []

    # A search and two datasets added, from the keyboard alone.
    page.get_by_label("Search datasets").focus()
    page.keyboard.type("squares")
    page.keyboard.press("Enter")
    expect(page.locator("#dataset-status")).to_have_text("2 datasets found.")
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    assert focused_name(page) == "Add Coloured squares"
    page.keyboard.press("Enter")
    expect(page.locator("#layer-list .layer-title")).to_have_text(["Coloured squares"])
    assert focused_name(page) == "Added Coloured squares"  # the focus stays put
    page.keyboard.press("Tab")
    assert focused_name(page) == "Add Navy squares"
    page.keyboard.press("Space")
    expect(page.locator("#layer-list .layer-title")).to_have_text(["Navy squares", "Coloured squares"])
    assert _axe(page) == []

    # Tab reaches every control of the layers, then the preview's zoom, the fields and Save.
    sequence = []
    for _ in range(30):
        page.keyboard.press("Tab")
        sequence.append(focused_name(page))
        if sequence[-1] == "Save the map":
            break
    controls = ["Move down Navy squares", "Opacity of Navy squares", "Visible Navy squares",
                "Remove Navy squares", "Move up Coloured squares", "Opacity of Coloured squares",
                "Visible Coloured squares", "Remove Coloured squares", "Title", "Abstract", "Save the map"]
    assert [name for name in sequence if name in controls] == controls, sequence

    # Enter and Space move a layer; the focus follows it to the move button still enabled.
    page.get_by_role("button", name="Move down Navy squares").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#layer-list .layer-title")).to_have_text(["Coloured squares", "Navy squares"])
    expect(page.get_by_role("button", name="Move up Navy squares")).to_be_focused()
    expect(page.locator("#layer-status")).to_have_text("Navy squares moved down: layer 2 of 2.")
    page.keyboard.press("Space")
    expect(page.locator("#layer-list .layer-title")).to_have_text(["Navy squares", "Coloured squares"])
    expect(page.get_by_role("button", name="Move down Navy squares")).to_be_focused()

    # The opacity slider's arrows and the checkbox's Space; Remove hands the focus on.
    page.keyboard.press("Tab")
    expect(page.get_by_label("Opacity of Navy squares")).to_be_focused()
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    expect(page.get_by_label("Opacity of Navy squares")).to_have_value("90")
    expect(page.locator(".layer-item[data-layer$='navy'] output")).to_have_text("90 %")
    page.keyboard.press("Tab")
    page.keyboard.press("Space")
    expect(page.get_by_label("Visible Navy squares")).not_to_be_checked()
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    expect(page.locator("#layer-list .layer-title")).to_have_text(["Coloured squares"])
    expect(page.get_by_role("button", name="Remove Coloured squares")).to_be_focused()
    expect(page.get_by_role("button", name="Add Navy squares")).to_have_attribute("aria-disabled", "false")
    assert _axe(page) == []
    assert not (watch.dialogs or watch.page_errors), watch
