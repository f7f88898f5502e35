"""Resource page editing in Chromium beyond the metadata form: an ISO 19115 file, the style (an
SLD through the upload endpoint's ``resource_style_upload``), copy (followed to the copy's page)
and the catalogue's message after a deletion; each offered in the Edit menu only to whoever holds
the right.

One live server, browser and data set per module and backend.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from playwright.sync_api import expect
from pyproj import Transformer

import cartotheca  # noqa: F401  (PROJ_DATA before mapnik)
from tests.catalogue import iso_documents as docs
from tests.factories import PASSWORD, make_resource, make_user
from tests.geodata.fixtures import POLYGONS, polygons_sld, publish_file, write_polygons
from tests.support.edit_menu import choose_edit
from tests.support.pixels import pixels as rgba_pixels
from tests.web.test_pages import XSS_PAYLOADS, _axe
from tests.web.test_resource_pages import _log_in

pytestmark = pytest.mark.usefixtures("chromium_path")

XSS = XSS_PAYLOADS[0]
GREY = "#808080"
# The editing panes and their items in the Edit menu, in its order; copy has its own button.
ITEMS = {"#edit-section": "Metadata", "#iso-section": "Upload ISO metadata", "#style-section": "Style",
         "#thumbnail-section": "Thumbnail", "#permissions-section": "Permissions",
         "#delete-section": "Delete"}
CONTROLS = (*ITEMS, "#copy-section")


def grey_sld() -> bytes:
    """Every polygon filled in one colour, whatever its attributes."""
    return ('<?xml version="1.0" encoding="UTF-8"?>'
            '<StyledLayerDescriptor version="1.0.0" xmlns="http://www.opengis.net/sld">'
            "<NamedLayer><Name>squares</Name><UserStyle><Name>grey</Name><FeatureTypeStyle><Rule>"
            f'<PolygonSymbolizer><Fill><CssParameter name="fill">{GREY}</CssParameter></Fill>'
            "</PolygonSymbolizer></Rule></FeatureTypeStyle></UserStyle></NamedLayer>"
            "</StyledLayerDescriptor>").encode()


XXE_SLD = (b'<?xml version="1.0"?><!DOCTYPE s [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
           b'<StyledLayerDescriptor version="1.0.0" xmlns="http://www.opengis.net/sld"><NamedLayer>'
           b"<Name>&xxe;</Name><UserStyle><FeatureTypeStyle><Rule><PolygonSymbolizer/></Rule>"
           b"</FeatureTypeStyle></UserStyle></NamedLayer></StyledLayerDescriptor>")


@pytest.fixture(scope="module")
def data(live_server, api, module_db, base_app, tmp_path_factory):
    settings = base_app.state.cartotheca.settings
    owner = make_user(module_db, "surveyor")
    reader = make_user(module_db, "visitor")
    folder = tmp_path_factory.mktemp("resource-editing")
    squares = publish_file(module_db, settings, owner, write_polygons(folder), title="Squares",
                           sld=polygons_sld())
    fields = publish_file(module_db, settings, owner, write_polygons(folder, "fields"), title="Fields",
                          sld=polygons_sld())
    # The reader may view the fields, not download them (so not copy them either).
    spec = {"users": [{"id": reader.id, "permissions": "view"}],
            "groups": [{"id": g["id"], "permissions": "none"}
                       for g in api.ok("GET", f"api/v2/resources/{fields.id}/permissions")["groups"]]}
    api.wait_execution(api.ok("PUT", f"api/v2/resources/{fields.id}/permissions", json=spec))
    route_map = make_resource(module_db, settings, owner, f"Route map {XSS}", resource_type="map")
    survey = make_resource(module_db, settings, owner, f"Old survey {XSS}")
    module_db.commit()
    return {"squares": squares.id, "squares_uuid": squares.uuid, "fields": fields.id,
            "map": route_map.id, "survey": survey.id}


def _sld_path(live_server, api, rid: int) -> str:
    """The path of the dataset's default style's SLD, as the ``api`` helper takes it."""
    url = api.ok("GET", f"api/v2/datasets/{rid}")["dataset"]["default_style"]["sld_url"]
    assert url.startswith(live_server.url), url
    return url[len(live_server.url):]


def _open(page, live_server, username: str, kind: str, pk: int) -> None:
    _log_in(page, live_server, username, PASSWORD, f"catalogue/#/{kind}/{pk}")
    page.wait_for_selector("#resource-view[data-ready='true']", state="attached")
    page.wait_for_selector("#copy-section[data-checked='true']", state="attached")


def test_owner_uploads_iso_metadata_and_a_hostile_file_changes_nothing(live_server, api, data, new_page):
    rid = data["squares"]
    page, watch = new_page(bypass_csp=True)  # for axe
    _open(page, live_server, "surveyor", "dataset", rid)
    page.locator("#edit-menu-button").click()
    expect(page.get_by_role("menuitem")).to_have_text(list(ITEMS.values()))
    expect(page.locator("#copy-open")).to_be_visible()
    assert _axe(page) == []
    page.get_by_role("menuitem", name="Upload ISO metadata").click()
    before = api.ok("GET", f"api/v2/datasets/{rid}")["dataset"]

    # A file with an external entity: refused in plain words, nothing changed.
    field = page.get_by_label("ISO 19115 metadata file (XML)")
    field.set_input_files({"name": "hostile.xml", "mimeType": "text/xml",
                           "buffer": docs.XXE_DOCUMENT.encode()})
    page.get_by_role("button", name="Upload the metadata").click()
    alert = page.locator("#iso-error")
    expect(alert).to_have_attribute("role", "alert")
    expect(alert).to_contain_text("The metadata was not changed:")
    assert "root:" not in alert.inner_text()
    expect(page.locator("#iso-status")).to_have_text("")
    after = api.ok("GET", f"api/v2/datasets/{rid}")["dataset"]
    assert (after["title"], after["abstract"], after["last_updated"]) == \
        (before["title"], before["abstract"], before["last_updated"])

    # A good file, from the keyboard: the file field, Tab to its button, Enter.
    field.set_input_files({"name": "rivers.xml", "mimeType": "text/xml",
                           "buffer": docs.gmd(data["squares_uuid"]).encode()})
    field.focus()
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Upload the metadata")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#iso-status")).to_have_text("The metadata from rivers.xml is applied.")
    expect(page.locator("#iso-error")).to_have_text("")
    expect(page.locator("#resource-title")).to_have_text("Rivers of the plain")
    expect(page.locator("#resource-abstract")).to_have_text(
        "Every river of the plain, digitised from 1:10000 maps.")
    record = api.ok("GET", f"api/v2/datasets/{rid}")["dataset"]
    assert record["title"] == "Rivers of the plain" and record["purpose"] == "Flood planning"
    assert not (watch.dialogs or watch.page_errors), watch


def _map_pixels(page):
    """A function giving the preview's pixels around a lon/lat (from the extent the view shows)."""
    box = page.locator("#resource-map").bounding_box()
    width = round(box["width"])
    x0, _, x1, y1 = page.evaluate("() => JSON.parse(document.querySelector('#resource-map').dataset.extent)")
    to_3857 = Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True)
    resolution = (x1 - x0) / width

    def around(pixels: np.ndarray, lon: float, lat: float) -> np.ndarray:
        x, y = to_3857.transform(lon, lat)
        col, row = round((x - x0) / resolution), round((y1 - y) / resolution)
        return pixels[row - 2:row + 3, col - 2:col + 3, :3].reshape(-1, 3)

    return around


def _wait_for_colours(page, expected: dict[tuple[float, float], tuple[int, int, int]]) -> None:
    page.wait_for_selector("#resource-map[data-loaded='true']", state="attached")
    around = _map_pixels(page)
    deadline = time.monotonic() + 10
    while True:
        pixels = rgba_pixels(page.locator("#resource-map").screenshot())
        seen = {where: around(pixels, *where) for where in expected}
        if all((region == expected[where]).all() for where, region in seen.items()):
            return
        assert time.monotonic() < deadline, {w: r[0].tolist() for w, r in seen.items()}
        time.sleep(0.1)


def _rgb(colour: str) -> tuple[int, int, int]:
    return tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))


def test_owner_uploads_a_style_and_the_preview_draws_it(live_server, api, data, new_page):
    rid = data["squares"]
    page, watch = new_page()
    _open(page, live_server, "surveyor", "dataset", rid)
    colours = {p["name"]: _rgb(p["color"]) for p in POLYGONS}
    probes = {"north-west": (5.0, 55.0), "north-east": (15.0, 55.0), "south-east": (15.0, 45.0)}
    _wait_for_colours(page, {where: colours[name] for name, where in probes.items()})
    style_before = _sld_path(live_server, api, rid)
    sld_before = api.request("GET", style_before).text

    choose_edit(page, "Style")
    field = page.get_by_label("Style file (SLD)")
    field.set_input_files({"name": "hostile.sld", "mimeType": "application/xml", "buffer": XXE_SLD})
    page.get_by_role("button", name="Upload the style").click()
    expect(page.locator("#style-error")).to_contain_text("The style was not changed:")
    assert "root:" not in page.locator("#style-error").inner_text()
    assert api.request("GET", style_before).text == sld_before

    field.set_input_files({"name": "grey.sld", "mimeType": "application/xml", "buffer": grey_sld()})
    field.focus()
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Upload the style")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#style-status")).to_have_text("The style from grey.sld is applied.")
    expect(page.locator("#style-error")).to_have_text("")
    # The preview, drawn again by the WMS, shows every square in the new fill.
    _wait_for_colours(page, dict.fromkeys(probes.values(), _rgb(GREY)))
    assert GREY in api.request("GET", style_before).text
    assert not (watch.dialogs or watch.page_errors), watch


def test_copy_leads_to_the_new_resource(live_server, api, data, new_page):
    original = data["map"]
    page, watch = new_page()
    _open(page, live_server, "surveyor", "map", original)
    # Style and ISO files are for datasets only.
    page.locator("#edit-menu-button").click()
    expect(page.get_by_role("menuitem")).to_have_text(["Metadata", "Thumbnail", "Permissions", "Delete"])
    page.keyboard.press("Escape")
    page.get_by_role("button", name="Copy", exact=True).click()
    expect(page.locator("#copy-section")).to_be_visible()
    page.get_by_role("button", name="Copy this resource").focus()
    page.keyboard.press("Enter")
    page.wait_for_url(lambda url: "#/map/" in url and not url.endswith(f"#/map/{original}"))
    copy_id = int(page.url.rsplit("/", 1)[1])
    expect(page.locator("#resource-title")).to_have_text(f"Route map {XSS}")
    notice = page.locator("#resource-notice")
    expect(notice).to_have_text(f"This is the new copy of “Route map {XSS}”.")
    assert page.locator("main img[src='x'], main script").count() == 0
    record = api.ok("GET", f"api/v2/resources/{copy_id}")["resource"]
    assert record["owner"]["username"] == "surveyor" and record["resource_type"] == "map"
    assert copy_id != original
    # The notice leads back to the original and goes once left.
    page.get_by_role("link", name=f"“Route map {XSS}”").click()
    page.wait_for_url(lambda url: url.endswith(f"#/map/{original}"))
    page.wait_for_selector("#resource-view[data-ready='true']", state="attached")
    expect(notice).to_have_text("")
    assert not (watch.dialogs or watch.page_errors or watch.console_errors), watch


def test_delete_shows_a_message_on_the_catalogue(live_server, api, data, new_page):
    rid = data["survey"]
    page, watch = new_page(bypass_csp=True)  # for axe
    _open(page, live_server, "surveyor", "dataset", rid)
    choose_edit(page, "Delete")
    page.get_by_role("button", name="Yes, delete it").click()
    page.wait_for_url(f"{live_server.url}?deleted={rid}")
    message = page.locator("#catalogue-notice")
    expect(message).to_have_attribute("role", "status")
    expect(message).to_have_text(f"“Old survey {XSS}” was deleted.")
    assert page.locator("main img[src='x'], main script").count() == 0
    assert api.request("GET", f"api/v2/resources/{rid}").status_code == 404
    assert _axe(page) == []
    # Opening a resource from the catalogue leaves the message behind with the search view.
    page.goto(f"{live_server.url}catalogue/#/map/{data['map']}")
    page.wait_for_selector("#resource-view[data-ready='true']", state="attached")
    expect(message).to_be_hidden()
    assert not (watch.dialogs or watch.page_errors), watch


def test_readers_see_only_the_controls_their_rights_allow(live_server, api, data, new_page):
    # Anonymous visitors: nothing at all.
    page, watch = new_page()
    page.goto(f"{live_server.url}catalogue/#/dataset/{data['squares']}")
    page.wait_for_selector("#copy-section[data-checked='true']", state="attached")
    expect(page.locator("#edit-menu")).to_be_hidden()
    for section in CONTROLS:
        expect(page.locator(section)).to_be_hidden()
    assert watch.clean, watch

    # A registered reader who may view but not download the fields: no editing, and no copy.
    reader, reader_watch = new_page()
    _open(reader, live_server, "visitor", "dataset", data["fields"])
    expect(reader.locator("#resource-title")).to_have_text("Fields")
    expect(reader.locator("#edit-menu")).to_be_hidden()
    for section in CONTROLS:
        expect(reader.locator(section)).to_be_hidden()
    # The style upload the page would send, from this session: refused, the style unchanged.
    sld_url = _sld_path(live_server, api, data["fields"])
    before = api.request("GET", sld_url).text
    status = reader.evaluate("""async ([url, pk, sld]) => {
      const csrf = document.cookie.split('; ').find((c) => c.startsWith('csrftoken=')).split('=')[1];
      const body = new FormData();
      body.append('action', 'resource_style_upload');
      body.append('resource_pk', String(pk));
      body.append('base_file', new Blob([sld], {type: 'application/xml'}), 'grey.sld');
      const r = await fetch(url, {method: 'POST', credentials: 'same-origin', body,
        headers: {'X-CSRFToken': csrf, 'X-Requested-With': 'XMLHttpRequest'}});
      return r.status; }""", [f"{live_server.url}api/v2/uploads/upload", data["fields"], grey_sld().decode()])
    assert status == 403
    assert api.request("GET", sld_url).text == before
    # A public map any registered user may copy (GeoNode's rule), but not edit.
    reader.goto(f"{live_server.url}catalogue/#/map/{data['map']}")
    reader.wait_for_selector("#copy-section[data-checked='true']", state="attached")
    expect(reader.locator("#copy-open")).to_be_visible()
    expect(reader.locator("#edit-menu")).to_be_hidden()
    assert not (reader_watch.dialogs or reader_watch.page_errors), reader_watch
