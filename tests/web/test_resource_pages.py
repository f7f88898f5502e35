"""Resource pages in Chromium beyond datasets: a map drawn from its layers (order, opacity,
visibility) through the built-in WMS, documents shown inline or offered for download, linked
resources; and the editing controls (metadata, permissions, delete), shown only for what the
API's ``perms`` allow, working through the cookie session with its CSRF header; and the account
pages beyond login: sign-up and the profile with an API token for scripts.

One live server, browser and data set per module and backend (startup dominates the run time).
"""

from __future__ import annotations

import time

import httpx
import numpy as np
import pytest
from playwright.sync_api import expect
from pyproj import Transformer

from cartotheca.catalogue import oauth
from tests.api.routes.document_samples import samples
from tests.conftest import ADMIN_PASSWORD
from tests.factories import PASSWORD, make_resource, make_user
from tests.geodata.fixtures import POLYGONS, polygons_sld, publish_file, write_polygons
from tests.support.edit_menu import choose_edit
from tests.support.pixels import pixels as rgba_pixels
from tests.web.test_pages import XSS_PAYLOADS, _axe

pytestmark = pytest.mark.usefixtures("chromium_path")

XSS = XSS_PAYLOADS[0]


def _document(api, name: str, data: bytes, title: str) -> int:
    files = {"doc_file": (name, data, "application/octet-stream")}
    response = api.request("POST", "api/v2/documents", files=files, data={"title": title})
    assert response.status_code in (200, 201), response.text
    return int(response.json()["document"]["pk"])


@pytest.fixture(scope="module")
def data(live_server, api, module_db, base_app, tmp_path_factory):
    settings = base_app.state.cartotheca.settings
    owner = make_user(module_db, "atlas")
    make_user(module_db, "reader")
    folder = tmp_path_factory.mktemp("resource-pages")
    squares = publish_file(module_db, settings, owner, write_polygons(folder), title="Squares",
                           sld=polygons_sld())
    # The same squares again on top, opaque but hidden: drawn, they would hide the half-opacity.
    layers = [{"dataset": squares.id, "order": 0, "opacity": 0.5, "visibility": True},
              {"dataset": squares.id, "order": 1, "opacity": 1.0, "visibility": False}]
    made = api.ok("POST", "api/v2/maps", json={"title": "Two squares", "maplayers": layers})["map"]
    files = samples()
    picture = _document(api, "picture.png", files["png"], f"Picture {XSS}")
    report = _document(api, "report.pdf", files["pdf"], "Report")
    sheet = _document(api, "sheet.xlsx", files["xlsx"], "Sheet")
    api.ok("POST", f"api/v2/resources/{made['pk']}/linked_resources", json={"target": [picture]})
    editable = make_resource(module_db, settings, owner, "Editable wetlands", keywords=["marsh"],
                             abstract="Before the edit.")
    return {"map": int(made["pk"]), "squares": squares.id, "picture": picture,
            "report": report, "sheet": sheet, "editable": editable.id}


def test_map_page_draws_its_layers_in_order_with_opacity_and_visibility(live_server, data, new_page):
    page, watch = new_page(bypass_csp=True)  # for axe
    page.goto(f"{live_server.url}catalogue/#/map/{data['map']}")
    expect(page.locator("#resource-title")).to_have_text("Two squares")
    page.wait_for_selector("#map-layers-section[data-ready='true']", state="attached")
    expect(page.locator("#map-layers li")).to_have_text(
        ["Squares · opacity 50 %", "Squares · opacity 100 % · hidden"])
    page.wait_for_selector("#resource-map[data-loaded='true']", state="attached")
    page.get_by_label("Basemap").select_option("none")  # the layers over white (basemap: test_maps)
    # The map's own extent is fitted; find the squares' pixels from the map view itself.
    box = page.locator("#resource-map").bounding_box()
    width = round(box["width"])
    extent = page.evaluate("() => JSON.parse(document.querySelector('#resource-map').dataset.extent)")
    to_3857 = Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True)
    x0, y0, x1, y1 = extent
    resolution = (x1 - x0) / width

    def pixel_of(lon: float, lat: float) -> tuple[int, int]:
        x, y = to_3857.transform(lon, lat)
        return round((x - x0) / resolution), round((y1 - y) / resolution)

    # Half-opaque over white, and the hidden copy on top not at all.
    expected = {p["name"]: np.array([(int(p["color"][i:i + 2], 16) + 255) / 2 for i in (1, 3, 5)])
                for p in POLYGONS}
    probes = {"north-west": (2, 58), "north-east": (18, 58), "south-east": (18, 42)}
    deadline = time.monotonic() + 10
    while True:
        pixels = rgba_pixels(page.locator("#resource-map").screenshot()).astype(int)
        seen = {}
        for name, (lon, lat) in probes.items():
            col, row = pixel_of(lon, lat)
            seen[name] = pixels[row - 1:row + 2, col - 1:col + 2, :3].reshape(-1, 3)
        if all((abs(region - expected[name]) <= 3).all() for name, region in seen.items()):
            break
        assert time.monotonic() < deadline, {n: r[0].tolist() for n, r in seen.items()}
        time.sleep(0.1)
    # An anonymous visitor sees no editing control.
    page.wait_for_selector("#linked-resources[data-ready='true']", state="attached")
    # The linked document, and the dataset the map's layers show.
    linked = page.locator("#linked-list a")
    expect(linked).to_have_count(2)
    found = {linked.nth(i).inner_text(): linked.nth(i).get_attribute("href") for i in range(2)}
    assert found == {f"Picture {XSS}": f"{live_server.url}catalogue/#/document/{data['picture']}",
                     "Squares": f"{live_server.url}catalogue/#/dataset/{data['squares']}"}
    expect(page.locator("#edit-menu")).to_be_hidden()
    for section in ("#edit-section", "#permissions-section", "#delete-section"):
        expect(page.locator(section)).to_be_hidden()
    assert _axe(page) == []
    assert watch.clean, watch


def test_documents_inline_when_the_browser_can_else_a_download_link(live_server, data, new_page):
    page, watch = new_page(bypass_csp=True)
    page.goto(f"{live_server.url}catalogue/#/document/{data['picture']}")
    expect(page.locator("#resource-title")).to_have_text(f"Picture {XSS}")
    page.wait_for_selector("#document-view[data-ready='true']", state="attached")
    image = page.locator("#document-content img")
    expect(image).to_have_attribute("src", f"{live_server.url}documents/{data['picture']}/link")
    page.wait_for_function("() => document.querySelector('#document-content img').naturalWidth > 0")
    expect(page.locator("#document-download")).to_have_attribute(
        "href", f"{live_server.url}documents/{data['picture']}/download")
    # Linked from the map; the payload in the title stays text.
    page.wait_for_selector("#linked-resources[data-ready='true']", state="attached")
    expect(page.locator("#linked-list li[data-relation='by'] a")).to_have_text(["Two squares"])
    assert page.locator("main img[src='x'], main script, main svg").count() == 0
    assert _axe(page) == []

    page.goto(f"{live_server.url}catalogue/#/document/{data['report']}")
    expect(page.locator("#resource-title")).to_have_text("Report")
    page.wait_for_selector("#document-view[data-ready='true']", state="attached")
    frame = page.locator("#document-content iframe")
    expect(frame).to_have_attribute("src", f"{live_server.url}documents/{data['report']}/link")
    expect(frame).to_have_attribute("title", "The document Report")
    expect(page.locator("#linked-list")).to_have_text("No linked resources.")

    page.goto(f"{live_server.url}catalogue/#/document/{data['sheet']}")
    expect(page.locator("#resource-title")).to_have_text("Sheet")
    page.wait_for_selector("#document-view[data-ready='true']", state="attached")
    assert page.locator("#document-content img, #document-content iframe").count() == 0
    download = page.locator("#document-download")
    expect(download).to_have_text("Download Sheet")
    with page.expect_download() as started:
        download.click()
    assert started.value.suggested_filename.endswith(".xlsx")
    assert _axe(page) == []
    assert not (watch.dialogs or watch.page_errors), watch


def _log_in(page, live_server, username: str, password: str, path: str) -> None:
    response = page.request.post(f"{live_server.url}account/login",
                                 data={"username": username, "password": password})
    assert response.ok, response.text()
    page.goto(f"{live_server.url}{path}")
    expect(page.locator("#account-nav")).to_contain_text(f"Signed in as {username}")


def test_controls_follow_perms_and_the_api_enforces_them(live_server, api, data, new_page):
    path = f"catalogue/#/dataset/{data['editable']}"
    page, watch = new_page()
    _log_in(page, live_server, "reader", PASSWORD, path)
    expect(page.locator("#resource-title")).to_have_text("Editable wetlands")
    page.wait_for_selector("#linked-resources[data-ready='true']", state="attached")
    expect(page.locator("#edit-menu")).to_be_hidden()
    for section in ("#edit-section", "#permissions-section", "#delete-section"):
        expect(page.locator(section)).to_be_hidden()
    # The same request the edit form sends, from this session with its CSRF header: refused.
    status = page.evaluate("""async (url) => {
      const csrf = document.cookie.split('; ').find((c) => c.startsWith('csrftoken=')).split('=')[1];
      const r = await fetch(url, {method: 'PATCH', credentials: 'same-origin',
        headers: {'X-CSRFToken': csrf, 'X-Requested-With': 'XMLHttpRequest',
                  'Content-Type': 'application/json'},
        body: JSON.stringify({title: 'Taken over'})});
      return r.status; }""", f"{live_server.url}api/v2/resources/{data['editable']}")
    assert status == 403
    assert api.ok("GET", f"api/v2/resources/{data['editable']}")["resource"]["title"] == "Editable wetlands"
    assert not (watch.dialogs or watch.page_errors), watch


def test_owner_edits_metadata_sets_permissions_and_deletes(live_server, api, data, new_page):
    rid = data["editable"]
    page, watch = new_page(bypass_csp=True)  # for axe
    _log_in(page, live_server, "atlas", PASSWORD, f"catalogue/#/dataset/{rid}")
    expect(page.locator("#resource-title")).to_have_text("Editable wetlands")
    page.wait_for_selector("#permissions-section[data-ready='true']", state="attached")
    choose_edit(page, "Metadata")
    expect(page.get_by_label("Title", exact=True)).to_have_value("Editable wetlands")
    expect(page.get_by_label("Keywords (separated by commas)")).to_have_value("marsh")
    assert _axe(page) == []

    # Metadata, from the keyboard: the fields, then Enter submits the form.
    page.get_by_label("Title", exact=True).fill(f"Wetlands {XSS}")
    page.get_by_label("Abstract", exact=True).fill("After the edit.")
    keywords = page.get_by_label("Keywords (separated by commas)")
    keywords.fill("marsh, peat")
    keywords.press("Enter")
    expect(page.locator("#edit-status")).to_have_text("Saved.")
    expect(page.locator("#resource-title")).to_have_text(f"Wetlands {XSS}")
    expect(page.locator("#resource-keywords li")).to_have_text(["marsh", "peat"])
    record = api.ok("GET", f"api/v2/resources/{rid}")["resource"]
    assert record["title"] == f"Wetlands {XSS}" and record["abstract"] == "After the edit."
    assert sorted(k["name"] for k in record["keywords"]) == ["marsh", "peat"]
    assert page.locator("main img[src='x']").count() == 0

    # Permissions: anonymous to none, saved through the execution the API answers.
    choose_edit(page, "Permissions")
    assert page.get_by_label("Permission of group anonymous").input_value() != "none"
    page.get_by_label("Permission of group anonymous").select_option("none")
    page.get_by_role("button", name="Save the permissions").click()
    expect(page.locator("#permissions-status")).to_have_text("The permissions are saved.")
    assert api.request("GET", f"api/v2/resources/{rid}", anonymous=True).status_code in (401, 403, 404)
    spec = api.ok("GET", f"api/v2/resources/{rid}/permissions")
    assert {g["name"]: g["permissions"] for g in spec["groups"]}["anonymous"] == "none"
    expect(page.get_by_label("Permission of group anonymous")).to_have_value("none")
    # Other accounts can only be looked up by administrators: the owner is told so.
    page.get_by_label("Add a user (username)").fill("reader")
    page.get_by_role("button", name="Add the user").click()
    expect(page.locator("#permissions-status")).to_contain_text("No user named reader")

    # The administrator adds the reader as an editor (by name), from the keyboard.
    admin, admin_watch = new_page()
    _log_in(admin, live_server, "admin", ADMIN_PASSWORD, f"catalogue/#/dataset/{rid}")
    admin.wait_for_selector("#permissions-section[data-ready='true']", state="attached")
    choose_edit(admin, "Permissions")
    admin.get_by_label("Add a user (username)").fill("reader")
    admin.get_by_label("with", exact=True).select_option("edit")
    admin.get_by_label("Add a user (username)").press("Enter")
    expect(admin.get_by_label("Permission of user reader")).to_have_value("edit")
    admin.get_by_role("button", name="Save the permissions").click()
    expect(admin.locator("#permissions-status")).to_have_text("The permissions are saved.")
    spec = api.ok("GET", f"api/v2/resources/{rid}/permissions")
    assert {u["username"]: u["permissions"] for u in spec["users"]}["reader"] == "edit"
    assert {g["name"]: g["permissions"] for g in spec["groups"]}["anonymous"] == "none"
    assert admin_watch.clean, admin_watch
    # The reader, now an editor, gets the metadata, ISO, style and thumbnail forms but neither
    # permissions nor delete.
    reader, _ = new_page()
    _log_in(reader, live_server, "reader", PASSWORD, f"catalogue/#/dataset/{rid}")
    expect(reader.locator("#edit-menu")).to_be_visible()
    choose_edit(reader, "Metadata")
    expect(reader.get_by_label("Title", exact=True)).to_have_value(f"Wetlands {XSS}")
    reader.locator("#edit-menu-button").click()
    expect(reader.get_by_role("menuitem")).to_have_text(["Metadata", "Upload ISO metadata", "Style",
                                                              "Thumbnail"])

    # Delete, after a confirmation: Cancel keeps it, Yes deletes it and returns to the catalogue.
    choose_edit(page, "Delete")
    expect(page.get_by_role("button", name="Cancel", exact=True)).to_be_focused()
    page.keyboard.press("Shift+Tab")
    expect(page.get_by_role("button", name="Yes, delete it")).to_be_focused()
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    expect(page.get_by_role("button", name="Yes, delete it")).to_be_hidden()
    assert api.request("GET", f"api/v2/resources/{rid}").status_code == 200
    choose_edit(page, "Delete")
    assert _axe(page) == []
    page.get_by_role("button", name="Yes, delete it").click()
    page.wait_for_url(f"{live_server.url}?deleted={rid}")
    assert api.request("GET", f"api/v2/resources/{rid}").status_code == 404
    assert not (watch.dialogs or watch.page_errors or watch.console_errors), watch


def test_signup_page_creates_an_account(live_server, api, new_page):
    page, watch = new_page(bypass_csp=True)  # for axe
    page.goto(f"{live_server.url}account/signup")
    assert _axe(page) == []
    page.get_by_label("Username").fill("reader")  # taken
    page.get_by_label("E-mail").fill("someone@example.org")
    page.get_by_label("Password").fill("Quite-long-pass-42")
    page.get_by_role("button", name="Sign up").click()
    expect(page.get_by_role("alert")).to_contain_text("Signing up failed")
    page.get_by_label("Username").fill("newcomer")
    page.get_by_label("Password").press("Enter")  # the keyboard submits the form
    expect(page.locator("#signup-done")).to_contain_text("Your account was created")
    expect(page.locator("#signup-form")).to_be_hidden()
    found = api.ok("GET", "api/v2/users?filter{username}=newcomer")["users"]
    assert [u["username"] for u in found] == ["newcomer"]
    assert not (watch.dialogs or watch.page_errors), watch


def test_profile_page_issues_an_api_token(live_server, api, module_db, new_page):
    application, secret = oauth.create_application(module_db, name="scripts")
    module_db.commit()
    page, watch = new_page(bypass_csp=True)  # for axe
    page.goto(f"{live_server.url}account/profile")
    expect(page.locator("#profile-anonymous")).to_be_visible()
    assert page.locator("#token-form").is_hidden()
    _log_in(page, live_server, "reader", PASSWORD, "account/profile")
    page.wait_for_selector("#token-section[data-ready='true']", state="attached")
    expect(page.locator("#profile-details")).to_contain_text("reader")
    assert _axe(page) == []
    page.get_by_label("Client id").fill(application.client_id)
    page.get_by_label("Client secret (confidential clients)").fill(secret)
    page.get_by_label("Your password").fill("not-the-password")
    page.get_by_role("button", name="Create a token").click()
    expect(page.get_by_role("alert")).to_contain_text("No token was issued")
    page.get_by_label("Your password").fill(PASSWORD)
    page.get_by_label("Your password").press("Enter")
    page.wait_for_selector("#token-result[data-ready='true']", state="attached")
    token = page.locator("#token-value").inner_text()
    claims = httpx.get(f"{live_server.url}o/userinfo", headers={"Authorization": f"Bearer {token}"}).json()
    assert claims["preferred_username"] == "reader"
    assert _axe(page) == []
    assert not (watch.dialogs or watch.page_errors), watch
