"""The catalogue's area filter in Chromium: an extent from the URL, a box drawn on the world map,
the map's view taken from the keyboard, and the API's ``extent`` filter behind all three.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import expect

from tests.factories import make_resource, make_user

pytestmark = pytest.mark.usefixtures("chromium_path")

ALPS = (6.0, 45.5, 14.0, 48.0)
ANDES = (-75.0, -30.0, -65.0, -10.0)
AUSTRALIA = (115.0, -40.0, 150.0, -12.0)


@pytest.fixture(scope="module")
def surveys(live_server, module_db, base_app):
    settings = base_app.state.cartotheca.settings
    owner = make_user(module_db, "surveyor")
    made = {title: make_resource(module_db, settings, owner, title, extent=extent).id
            for title, extent in (("Alpine survey", ALPS), ("Andes survey", ANDES),
                                  ("Australian survey", AUSTRALIA))}
    module_db.commit()
    return made


def wait_ready(page):
    page.wait_for_selector("#results[data-ready='true']", state="attached")
    page.wait_for_selector("#facet-groups[data-ready='true']", state="attached")


def titles(page):
    return page.locator("#results .result-link")


def extent_of(page) -> list[float]:
    (value,) = parse_qs(urlsplit(page.url).query)["extent"]
    return [float(v) for v in value.split(",")]


def map_pixel(box: dict, lon: float, lat: float) -> tuple[float, float]:
    """Page coordinates of a lon/lat on the area map, which shows the whole world fitted."""
    resolution = max(360 / box["width"], 180 / box["height"])
    return (box["x"] + box["width"] / 2 + lon / resolution,
            box["y"] + box["height"] / 2 - lat / resolution)


def test_extent_in_the_url_filters_the_results_and_is_drawn(live_server, api, surveys, new_page):
    page, watch = new_page()
    page.goto(f"{live_server.url}?extent=0,40,20,50&sort=title")
    wait_ready(page)
    expect(titles(page)).to_have_text(["Alpine survey"])
    expect(page.locator("#area-map")).to_have_attribute("data-extent", "0,40,20,50")
    expect(page.locator("#area-text")).to_have_text("Resources within 0°E to 20°E, 40°N to 50°N.")
    # The page's answer is the API's.
    listed = api.ok("GET", "api/v2/resources?extent=0,40,20,50", anonymous=True)
    assert [r["title"] for r in listed["resources"]] == ["Alpine survey"]

    # A box crossing South America and the Pacific: the Andes only.
    page.goto(f"{live_server.url}?extent=-120,-35,-60,0&sort=title")
    wait_ready(page)
    expect(titles(page)).to_have_text(["Andes survey"])

    # Clearing the area brings every survey back, and the URL forgets it.
    page.get_by_role("button", name="Clear area").click()
    wait_ready(page)
    expect(titles(page)).to_have_text(["Alpine survey", "Andes survey", "Australian survey"])
    assert "extent" not in parse_qs(urlsplit(page.url).query)
    expect(page.locator("#area-clear")).to_be_disabled()

    # A malformed extent is ignored rather than sent to the API.
    page.goto(f"{live_server.url}?extent=10,abc,5,1&sort=title")
    wait_ready(page)
    expect(titles(page)).to_have_text(["Alpine survey", "Andes survey", "Australian survey"])
    assert watch.clean, watch


def test_a_box_drawn_on_the_map_becomes_the_filter(live_server, surveys, new_page):
    page, watch = new_page()
    page.goto(f"{live_server.url}?sort=title")
    wait_ready(page)
    area_map = page.locator("#area-map")
    page.wait_for_function("document.querySelector('#area-map canvas') !== null")
    box = area_map.bounding_box()
    page.get_by_role("button", name="Draw an area").click()
    expect(page.get_by_role("button", name="Draw an area")).to_have_attribute("aria-pressed", "true")
    start = map_pixel(box, 100, -5)
    end = map_pixel(box, 160, -50)
    page.mouse.move(*start)
    page.mouse.down()
    page.mouse.move((start[0] + end[0]) / 2, (start[1] + end[1]) / 2, steps=5)
    page.mouse.move(*end, steps=5)
    page.mouse.up()
    wait_ready(page)
    expect(titles(page)).to_have_text(["Australian survey"])
    west, south, east, north = extent_of(page)
    # The drawn box, give or take a pixel's worth of degrees.
    tolerance = 2 * max(360 / box["width"], 180 / box["height"])
    assert abs(west - 100) < tolerance and abs(east - 160) < tolerance
    assert abs(south + 50) < tolerance and abs(north + 5) < tolerance
    expect(page.get_by_role("button", name="Draw an area")).to_have_attribute("aria-pressed", "false")
    # Back returns to the unfiltered search.
    page.go_back()
    wait_ready(page)
    expect(titles(page)).to_have_text(["Alpine survey", "Andes survey", "Australian survey"])
    expect(area_map).to_have_attribute("data-extent", "")
    assert watch.clean, watch


def test_the_maps_view_becomes_the_filter_from_the_keyboard(live_server, surveys, new_page):
    page, _ = new_page()
    page.goto(f"{live_server.url}?sort=title")
    wait_ready(page)
    page.wait_for_function("document.querySelector('#area-map canvas') !== null")
    use_view = page.get_by_role("button", name="Use the map's view")
    use_view.focus()
    page.keyboard.press("Enter")
    wait_ready(page)
    whole = extent_of(page)
    assert whole[0] <= -170 and whole[2] >= 170
    expect(titles(page)).to_have_text(["Alpine survey", "Andes survey", "Australian survey"])

    # Zoom in twice and pan east with the keyboard, then take the view: the Andes drop out.
    page.locator("#area-map").focus()
    page.keyboard.press("+")
    page.keyboard.press("+")
    for _ in range(4):
        page.keyboard.press("ArrowRight")
    page.wait_for_timeout(600)  # the keyboard's pan and zoom animate
    use_view.focus()
    page.keyboard.press("Enter")
    page.wait_for_function("!new URLSearchParams(location.search).get('extent').startsWith('-180')")
    wait_ready(page)
    west, _, east, _ = extent_of(page)
    assert west > whole[0] and east - west < (whole[2] - whole[0]) / 2
    assert "Andes survey" not in titles(page).all_inner_texts()
