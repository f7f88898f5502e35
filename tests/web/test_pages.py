"""The web pages in Chromium: the catalogue's search, facets, sort and paging; a dataset's page
with its map preview through the built-in WMS; axe-core's accessibility check; login, logout and
a resource made private; and a corpus of XSS payloads stored through the API.

One live server, browser and data set per module and backend (startup dominates the run time).
The tests that add or change resources come last: the earlier ones count the module's data.
"""

from __future__ import annotations

import json
import time
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import expect
from pyproj import Transformer

from tests.conftest import ADMIN_PASSWORD
from tests.factories import make_group, make_resource, make_user
from tests.geodata.fixtures import POLYGONS, polygons_sld, publish_file, write_polygons
from tests.support.pixels import pixels as rgba_pixels
from tests.web.conftest import AXE_JS

SHEETS = 9  # enough documents for a second page of results

# Skip (or fail in CI) before any server or data is set up when there is no browser.
pytestmark = pytest.mark.usefixtures("chromium_path")


@pytest.fixture(scope="module")
def catalogue_data(live_server, module_db, base_app, tmp_path_factory):
    settings = base_app.state.cartotheca.settings
    owner = make_user(module_db, "cartographer")
    polygons = publish_file(module_db, settings, owner, write_polygons(tmp_path_factory.mktemp("web")),
                            title="Polygons of Europe", sld=polygons_sld())
    team = make_group(module_db, "Hydrology team")
    rivers = make_resource(module_db, settings, owner, "Rivers of Europe", category="inlandWaters",
                           keywords=["hydrology"], abstract="Main rivers and their basins.",
                           regions=["EUR"], group=team)
    lakes = make_resource(module_db, settings, owner, "Lakes register", category="inlandWaters",
                          keywords=["hydrology"], regions=["EUR", "FRA"])
    report = make_resource(module_db, settings, owner, "Annual report 2025", resource_type="document",
                           category="economy")
    city = make_resource(module_db, settings, owner, "City overview map", resource_type="map")
    sheets = [make_resource(module_db, settings, owner, f"Survey sheet {n}", resource_type="document",
                            category="location") for n in range(1, SHEETS + 1)]
    return {"polygons": polygons.id, "rivers": rivers.id, "lakes": lakes.id, "report": report.id,
            "city": city.id, "sheets": [s.id for s in sheets], "owner": owner.username}


def result_titles(page):
    return page.locator("#results .result-link")


def wait_ready(page):
    page.wait_for_selector("#results[data-ready='true']", state="attached")
    page.wait_for_selector("#facet-groups[data-ready='true']", state="attached")


def facet_count(page, facet: str, value: str) -> str:
    return page.locator(f"[data-facet='{facet}'] button[data-value='{value}'] .facet-count").inner_text()


def query_of(page) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query)


def test_search_facets_sort_and_paging(live_server, catalogue_data, new_page):
    page, watch = new_page()
    page.goto(f"{live_server.url}?sort=title")
    wait_ready(page)
    total = 5 + SHEETS
    expect(page.locator("#result-count")).to_have_text(f"{total} resources found")
    expect(result_titles(page)).to_have_text(
        ["Annual report 2025", "City overview map", "Lakes register", "Polygons of Europe",
         "Rivers of Europe", "Survey sheet 1", "Survey sheet 2", "Survey sheet 3", "Survey sheet 4",
         "Survey sheet 5"])
    assert facet_count(page, "type", "dataset") == "3"
    assert facet_count(page, "type", "document") == str(1 + SHEETS)
    assert facet_count(page, "type", "map") == "1"
    assert page.locator("[data-facet='type'] button[data-value='geoapp']").count() == 0  # no geoapps
    assert facet_count(page, "category", "inlandWaters") == "2"
    assert facet_count(page, "keyword", "hydrology") == "2"
    assert facet_count(page, "region", "EUR") == "2" and facet_count(page, "region", "FRA") == "1"
    assert facet_count(page, "owner", "cartographer") == str(total)
    assert facet_count(page, "group", "hydrology-team") == "1"

    # Paging: the second page holds the rest; the URL carries the page.
    page.get_by_role("button", name="Next page").click()
    expect(result_titles(page)).to_have_text([f"Survey sheet {n}" for n in range(6, SHEETS + 1)])
    expect(page.locator("#page-info")).to_have_text("Page 2 of 2")
    assert query_of(page)["page"] == ["2"]
    page.go_back()
    expect(result_titles(page)).to_have_count(10)
    expect(page.locator("#page-info")).to_have_text("Page 1 of 2")

    # A type facet narrows the results and the other facets' counts follow it.
    page.locator("[data-facet='type'] button[data-value='document']").click()
    expect(page.locator("#result-count")).to_have_text(f"{1 + SHEETS} resources found")
    wait_ready(page)
    assert page.locator("[data-facet='category'] button[data-value='inlandWaters']").count() == 0
    assert facet_count(page, "category", "location") == str(SHEETS)
    assert facet_count(page, "owner", "cartographer") == str(1 + SHEETS)
    assert page.locator("[data-facet='region']").count() == 0  # no document has a region
    page.locator("[data-facet='type'] button[data-value='document']").click()  # toggles off
    expect(page.locator("#result-count")).to_have_text(f"{total} resources found")
    page.locator("[data-facet='type'] button[data-value='dataset']").click()
    expect(result_titles(page)).to_have_text(["Lakes register", "Polygons of Europe", "Rivers of Europe"])
    page.locator("[data-facet='category'] button[data-value='inlandWaters']").click()
    expect(result_titles(page)).to_have_text(["Lakes register", "Rivers of Europe"])
    expect(page.locator("[data-facet='category'] button[data-value='inlandWaters']")).to_have_attribute(
        "aria-pressed", "true")
    wait_ready(page)
    assert facet_count(page, "region", "FRA") == "1" and facet_count(page, "group", "hydrology-team") == "1"
    page.locator("[data-facet='region'] button[data-value='FRA']").click()
    expect(result_titles(page)).to_have_text(["Lakes register"])
    wait_ready(page)
    page.locator("[data-facet='region'] button[data-value='FRA']").click()
    expect(result_titles(page)).to_have_text(["Lakes register", "Rivers of Europe"])

    # The search box, with the filters kept; the URL can be bookmarked and shared.
    page.get_by_label("Search titles and abstracts").fill("basins")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(result_titles(page)).to_have_text(["Rivers of Europe"])
    state = query_of(page)
    assert state["q"] == ["basins"] and state["type"] == ["dataset"] and state["category"] == ["inlandWaters"]
    other, _ = new_page()
    other.goto(page.url)
    expect(result_titles(other)).to_have_text(["Rivers of Europe"])
    expect(other.get_by_label("Search titles and abstracts")).to_have_value("basins")

    # Sorting from the select, newest or by title descending.
    page.get_by_role("button", name="Clear filters").click()
    page.get_by_label("Search titles and abstracts").fill("")
    page.get_by_label("Sort by").select_option("-title")
    expect(result_titles(page).first).to_have_text(f"Survey sheet {SHEETS}")
    assert query_of(page)["sort"] == ["-title"]
    assert watch.clean, watch


def test_dataset_page_shows_metadata_links_and_its_map(live_server, api, catalogue_data, new_page):
    record = api.ok("GET", f"api/v2/resources/{catalogue_data['polygons']}")["resource"]
    assert record["detail_url"] == f"{live_server.url}catalogue/#/dataset/{record['pk']}"
    page, watch = new_page()
    # From the catalogue: the result links to the detail_url, which the page routes itself.
    page.goto(f"{live_server.url}?q=Polygons")
    page.get_by_role("link", name="Polygons of Europe").click()
    assert page.url == record["detail_url"]
    expect(page.locator("#resource-title")).to_have_text("Polygons of Europe")
    expect(page.locator("#resource-metadata")).to_contain_text(catalogue_data["owner"])
    links = page.locator("#resource-links a")
    hrefs = [links.nth(i).get_attribute("href") for i in range(links.count())]
    assert hrefs and all(h.startswith(live_server.url) for h in hrefs)
    assert {link["url"] for link in record["links"] if link.get("url")} >= set(hrefs)

    page.wait_for_selector("#resource-map[data-loaded='true']", state="attached")
    # The data alone, over white: the basemap (checked in test_maps) is switched off.
    page.get_by_label("Basemap").select_option("none")
    box = page.locator("#resource-map").bounding_box()
    width, height = round(box["width"]), round(box["height"])
    to_3857 = Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True)
    (x0, x1), (y0, y1) = zip(to_3857.transform(0, 40), to_3857.transform(20, 60), strict=True)
    resolution = max((x1 - x0) / width, (y1 - y0) / height)  # the view fits the dataset's extent
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2

    def pixel_of(lon: float, lat: float) -> tuple[int, int]:
        x, y = to_3857.transform(lon, lat)
        return round(width / 2 + (x - cx) / resolution), round(height / 2 - (y - cy) / resolution)

    colours = {p["name"]: tuple(int(p["color"][i:i + 2], 16) for i in (1, 3, 5)) for p in POLYGONS}
    probes = {"north-west": (5, 55), "north-east": (15, 55), "south-east": (15, 45)}
    deadline = time.monotonic() + 10
    while True:
        pixels = rgba_pixels(page.locator("#resource-map").screenshot())
        seen = {}
        for name, (lon, lat) in probes.items():
            col, row = pixel_of(lon, lat)
            seen[name] = pixels[row - 2:row + 3, col - 2:col + 3, :3].reshape(-1, 3)
        if all((region == colours[name]).all() for name, region in seen.items()):
            break
        assert time.monotonic() < deadline, {n: r[0].tolist() for n, r in seen.items()}
        time.sleep(0.1)
    # The attribute table, paged from the WFS.
    page.wait_for_selector("#attributes[data-ready='true']", state="attached")
    headers = page.locator("#attribute-table th").all_inner_texts()
    assert {"name", "color", "rank", "area"} <= set(headers)
    names = page.locator(f"#attribute-table tbody td:nth-child({headers.index('name') + 1})")
    assert sorted(names.all_inner_texts()) == sorted(p["name"] for p in POLYGONS)
    expect(page.locator("#rows-info")).to_have_text(f"Rows 1–{len(POLYGONS)} of {len(POLYGONS)}")
    expect(page.get_by_role("button", name="Next rows")).to_be_disabled()
    # Beyond the data nothing is drawn.
    col, _ = pixel_of(20, 50)
    if col + 10 < width:
        assert tuple(pixels[height // 2, col + 8, :3]) == (255, 255, 255)
    assert watch.clean, watch


def _axe(page) -> list[dict]:
    page.add_script_tag(path=str(AXE_JS))
    result = page.evaluate("async () => JSON.stringify(await axe.run(document))")
    violations = json.loads(result)["violations"]
    return [{"id": v["id"], "impact": v["impact"], "help": v["help"],
             "targets": [n["target"] for n in v["nodes"]][:5]}
            for v in violations if v["impact"] in ("serious", "critical")]


def test_pages_are_accessible_and_work_from_the_keyboard(live_server, catalogue_data, new_page):
    # axe is injected as an inline script, which the pages' CSP forbids: this context bypasses it.
    page, _ = new_page(bypass_csp=True)
    page.goto(live_server.url)
    wait_ready(page)
    assert _axe(page) == []
    page.goto(f"{live_server.url}catalogue/#/dataset/{catalogue_data['polygons']}")
    page.wait_for_selector("#resource-map[data-loaded='true']", state="attached")
    page.wait_for_selector("#attributes[data-ready='true']", state="attached")
    assert _axe(page) == []
    for path in ("account/login", "account/logout", "upload"):
        page.goto(f"{live_server.url}{path}")
        page.wait_for_load_state("load")
        assert _axe(page) == [], path

    # The catalogue from the keyboard alone: skip link, search, open a result.
    page.goto(live_server.url)
    wait_ready(page)
    page.keyboard.press("Tab")
    expect(page.locator(".skip-link")).to_be_focused()
    page.get_by_label("Search titles and abstracts").focus()
    page.keyboard.type("Lakes")
    page.keyboard.press("Enter")
    expect(result_titles(page)).to_have_text(["Lakes register"])
    result_titles(page).first.focus()
    page.keyboard.press("Enter")
    expect(page.locator("#resource-title")).to_have_text("Lakes register")


def log_in(page, live_server, next_path: str = "") -> None:
    """Open the admin's cookie session the way the login page does (its own test drives the form)."""
    response = page.request.post(f"{live_server.url}account/login",
                                 data={"username": "admin", "password": ADMIN_PASSWORD})
    assert response.ok, response.text()
    page.goto(f"{live_server.url}{next_path.lstrip('/')}")
    expect(page.locator("#account-nav")).to_contain_text("Signed in as admin")


def test_featured_resources_and_favourites(live_server, api, catalogue_data, new_page):
    api.ok("PATCH", f"api/v2/resources/{catalogue_data['city']}", json={"featured": True})
    page, watch = new_page(bypass_csp=True)  # for axe
    page.goto(live_server.url)
    wait_ready(page)
    expect(page.locator("#featured .result-link")).to_have_text(["City overview map"])
    assert _axe(page) == []
    assert page.locator("#favorites-only").is_hidden()  # anonymous: no favourites
    assert page.locator("#results .favorite").count() == 0
    page.get_by_label("Search titles and abstracts").fill("Rivers")
    page.get_by_label("Search titles and abstracts").press("Enter")
    expect(result_titles(page)).to_have_text(["Rivers of Europe"])
    expect(page.locator("#featured")).to_be_hidden()  # only above an unfiltered search

    log_in(page, live_server, "?q=Europe&sort=title")
    expect(result_titles(page)).to_have_text(["Polygons of Europe", "Rivers of Europe"])
    star = page.get_by_role("button", name="Favourite: Rivers of Europe")
    expect(star).to_have_attribute("aria-pressed", "false")
    star.click()
    expect(star).to_have_attribute("aria-pressed", "true")
    assert _axe(page) == []  # signed in: the stars and "My favourites" too
    favourites = api.ok("GET", "api/v2/resources/favorites")
    assert [r["title"] for r in favourites["favorites"]] == ["Rivers of Europe"]
    page.get_by_role("button", name="My favourites").click()
    expect(result_titles(page)).to_have_text(["Rivers of Europe"])
    assert query_of(page)["favorite"] == ["true"]
    page.reload()
    expect(result_titles(page)).to_have_text(["Rivers of Europe"])
    expect(page.get_by_role("button", name="Favourite: Rivers of Europe")).to_have_attribute(
        "aria-pressed", "true")
    page.get_by_role("button", name="Favourite: Rivers of Europe").click()
    expect(page.get_by_role("button", name="Favourite: Rivers of Europe")).to_have_attribute(
        "aria-pressed", "false")
    assert api.ok("GET", "api/v2/resources/favorites")["total"] == 0
    assert watch.clean, watch


def test_upload_a_shapefile_and_follow_it_to_the_dataset(live_server, catalogue_data, new_page,
                                                        tmp_path):
    shapefile = write_polygons(tmp_path, "uploaded", driver="ESRI Shapefile")
    parts = sorted(p for p in tmp_path.iterdir() if p.stem == "uploaded")
    assert {p.suffix for p in parts} >= {".shp", ".dbf", ".shx", ".prj"} and shapefile in parts
    page, watch = new_page(bypass_csp=True)  # for axe
    page.goto(f"{live_server.url}upload")
    expect(page.locator("#upload-login-link")).to_be_visible()  # anonymous: no form
    assert page.locator("#upload-form").is_hidden()
    log_in(page, live_server, "upload")
    page.get_by_label("Files:").set_input_files([str(p) for p in parts])
    expect(page.locator("#upload-chosen li")).to_have_count(len(parts))
    page.get_by_label("Title (optional)").fill("Uploaded squares")
    assert _axe(page) == []
    page.get_by_role("button", name="Upload").click()
    page.wait_for_selector("#upload-status[data-done]", state="attached", timeout=30_000)
    assert page.locator("#upload-status").get_attribute("data-done") == "finished", \
        page.locator("#upload-error").inner_text()
    assert page.locator("#transfer-progress").evaluate("p => p.value") == 100
    assert page.locator("#import-progress").evaluate("p => p.value") == 100
    expect(page.locator("#upload-message")).to_have_text("The dataset is ready.")
    result = page.get_by_role("link", name="Open the dataset").get_attribute("href")

    # A file the import cannot read: the page says so in words, and no link is offered.
    broken = tmp_path / "broken.geojson"
    broken.write_text('{"type": "FeatureCollection", "features": [')
    page.get_by_label("Files:").set_input_files(str(broken))
    page.get_by_role("button", name="Upload").click()
    page.wait_for_selector("#upload-status[data-done='failed']", state="attached", timeout=30_000)
    expect(page.locator("#upload-error")).to_be_visible()
    assert page.locator("#upload-error").inner_text().strip()
    expect(page.locator("#upload-result")).to_be_hidden()

    page.goto(f"{live_server.url.rstrip('/')}{result}")
    expect(page.locator("#resource-title")).to_have_text("Uploaded squares")
    page.wait_for_selector("#resource-map[data-loaded='true']", state="attached")
    assert watch.clean, watch


def test_private_resource_disappears_for_anonymous_and_login_shows_it(live_server, api, module_db, base_app,
                                                                      new_page):
    owner = make_user(module_db, "surveyor")
    secret = make_resource(module_db, base_app.state.cartotheca.settings, owner, "Wetlands inventory")
    detail = f"{live_server.url}catalogue/#/dataset/{secret.id}"
    page, _ = new_page()
    page.goto(f"{live_server.url}?q=Wetlands")
    expect(result_titles(page)).to_have_text(["Wetlands inventory"])

    groups = api.ok("GET", f"api/v2/resources/{secret.id}/permissions")["groups"]
    anonymous = next(g for g in groups if g["name"] == "anonymous")
    assert anonymous["permissions"] != "none"
    api.wait_execution(api.ok("PATCH", f"api/v2/resources/{secret.id}/permissions",
                              json={"groups": [{"id": anonymous["id"], "permissions": "none"}]}))
    assert api.ok("GET", "api/v2/resources?search=Wetlands", anonymous=True)["total"] == 0

    page.reload()
    expect(page.locator("#result-count")).to_have_text("0 resources found")
    expect(result_titles(page)).to_have_count(0)
    page.goto(detail)
    expect(page.locator("#resource-title")).to_have_text("Resource not available")
    expect(page.get_by_role("alert")).to_be_visible()

    # The admin logs in through the login page (cookie session) and is sent on to the resource.
    admin, watch = new_page()
    admin.goto(f"{live_server.url}account/login?next=/catalogue/%23/dataset/{secret.id}")
    admin.get_by_label("Username").fill("admin")
    admin.get_by_label("Password").fill("not-the-password")
    admin.get_by_role("button", name="Log in").click()
    expect(admin.get_by_role("alert")).to_have_text("Wrong username or password.")
    admin.get_by_label("Password").fill(ADMIN_PASSWORD)
    admin.get_by_role("button", name="Log in").click()
    expect(admin.locator("#resource-title")).to_have_text("Wetlands inventory")
    assert admin.url == detail
    expect(admin.locator("#account-nav")).to_contain_text("Signed in as admin")

    # Logging out (a POST with the CSRF token) ends the session: the resource is hidden again.
    admin.get_by_role("link", name="Log out").click()
    admin.get_by_role("button", name="Log out").click()
    admin.wait_for_url(live_server.url)
    expect(admin.locator("#login-link")).to_be_visible()
    assert "cartotheca_session" not in {c["name"] for c in admin.context.cookies()}
    admin.goto(detail)
    expect(admin.locator("#resource-title")).to_have_text("Resource not available")


XSS_PAYLOADS = [
    "<img src=x onerror=alert(1)>",
    '"><script>alert(2)</script>',
    "'><svg onload=alert(3)>",
    '<a href="javascript:alert(4)">click</a>',
    '<iframe srcdoc="<script>alert(5)</script>"></iframe>',
    "{{constructor.constructor('alert(6)')()}}",
]


def test_xss_payloads_stored_through_the_api_run_no_script(live_server, api, module_db, base_app,
                                                         new_page):
    settings = base_app.state.cartotheca.settings
    owner = make_user(module_db, "mallory")
    ids = []
    for n, payload in enumerate(XSS_PAYLOADS):
        resource = make_resource(module_db, settings, owner, f"placeholder {n}")
        api.ok("PATCH", f"api/v2/resources/{resource.id}",
               json={"title": f"probe{n} {payload}", "abstract": f"abstract {payload}",
                     "keywords": [f"kw{n} {payload}"]})
        ids.append(resource.id)
    titles = [f"probe{n} {payload}" for n, payload in enumerate(XSS_PAYLOADS)]
    assert [api.ok("GET", f"api/v2/resources/{i}")["resource"]["title"] for i in ids] == titles

    page, watch = new_page()
    page.goto(f"{live_server.url}?q=probe&sort=title")
    wait_ready(page)
    expect(result_titles(page)).to_have_text(titles)  # shown literally, as text
    expect(page.locator(".result-abstract")).to_have_text([f"abstract {p}" for p in XSS_PAYLOADS])
    keyword_labels = page.locator("[data-facet='keyword'] .facet-label").all_inner_texts()
    assert {f"kw{n} {p}" for n, p in enumerate(XSS_PAYLOADS)} <= set(keyword_labels)
    injected = "main img[src='x'], main svg, main iframe, main script, main a[href^='javascript']"
    assert page.locator(injected).count() == 0
    for resource_id, title, payload in zip(ids, titles, XSS_PAYLOADS, strict=True):
        page.goto(f"{live_server.url}catalogue/#/dataset/{resource_id}")
        expect(page.locator("#resource-title")).to_have_text(title)
        expect(page.locator("#resource-abstract")).to_have_text(f"abstract {payload}")
        keyword = f"kw{XSS_PAYLOADS.index(payload)} {payload}"
        expect(page.locator("#resource-keywords li")).to_have_text([keyword])
        assert page.locator(injected).count() == 0
        assert page.title() == f"{title} · Cartotheca"
    page.wait_for_timeout(100)  # an onerror or onload handler would have fired by now
    assert watch.clean, watch
