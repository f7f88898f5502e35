"""The resource page's Edit menu in Chromium: a menu button used from the keyboard, each item
opening its one pane (focus moved into it, Escape and Cancel giving it back to the button); the
metadata form's fuller field set written through the API and shown back after a reload; field
errors by their field; a new thumbnail; delete after our own confirmation; nothing for a user
without the right; axe and a phone's width with the menu and a form open.

One live server, browser and data set per module (on the first backend; see conftest).
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.api.routes.document_samples import samples
from tests.factories import make_resource, make_user
from tests.support.edit_menu import choose_edit
from tests.web.test_account_pages import PHONE, beyond_width
from tests.web.test_pages import _axe
from tests.web.test_resource_editing import _open

pytestmark = pytest.mark.usefixtures("chromium_path")


@pytest.fixture(scope="module")
def data(live_server, module_db, base_app):
    settings = base_app.state.cartotheca.settings
    owner = make_user(module_db, "cartographer", first_name="Cara", last_name="Tographer")
    make_user(module_db, "onlooker")
    tidal = make_resource(module_db, settings, owner, "Tidal flats", abstract="Mapped at low tide.",
                          keywords=["coast"], regions=["ITA"])
    dunes = make_resource(module_db, settings, owner, "Coastal dunes")
    module_db.commit()
    return {"tidal": tidal.id, "dunes": dunes.id}


def test_menu_from_the_keyboard_and_the_fuller_metadata_form(live_server, api, data, new_page):
    rid = data["tidal"]
    page, watch = new_page(bypass_csp=True)  # for axe
    _open(page, live_server, "cartographer", "dataset", rid)
    button = page.locator("#edit-menu-button")
    expect(button).to_have_attribute("aria-expanded", "false")
    # Enter opens the menu on its first item; arrows, Home and End move; Escape closes it.
    button.focus()
    page.keyboard.press("Enter")
    expect(button).to_have_attribute("aria-expanded", "true")
    items = page.get_by_role("menuitem")
    expect(items).to_have_text(["Metadata", "Upload ISO metadata", "Style", "Thumbnail", "Permissions",
                                 "Delete"])
    expect(page.get_by_role("menuitem", name="Metadata", exact=True)).to_be_focused()
    page.keyboard.press("ArrowDown")
    expect(page.get_by_role("menuitem", name="Upload ISO metadata")).to_be_focused()
    page.keyboard.press("End")
    expect(page.get_by_role("menuitem", name="Delete")).to_be_focused()
    page.keyboard.press("ArrowDown")  # wraps round
    expect(page.get_by_role("menuitem", name="Metadata", exact=True)).to_be_focused()
    page.keyboard.press("ArrowUp")
    expect(page.get_by_role("menuitem", name="Delete")).to_be_focused()
    page.keyboard.press("Home")
    expect(page.get_by_role("menuitem", name="Metadata", exact=True)).to_be_focused()
    assert _axe(page) == []  # with the menu open
    page.keyboard.press("Escape")
    expect(page.locator("#edit-menu-list")).to_be_hidden()
    expect(button).to_be_focused()
    # Space opens it too; Enter on an item opens that one pane and moves focus into it.
    page.keyboard.press(" ")
    expect(page.get_by_role("menuitem", name="Metadata", exact=True)).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#edit-section")).to_be_visible()
    expect(page.locator("#permissions-section")).to_be_hidden()
    expect(page.get_by_label("Title", exact=True)).to_be_focused()
    expect(page.get_by_label("Title", exact=True)).to_have_value("Tidal flats")
    regions = page.get_by_label("Regions (hold Ctrl or Shift to choose several)", exact=True)
    page.wait_for_selector("#edit-regions[data-ready='true']", state="attached")
    expect(regions).to_have_values(["ITA"])
    assert _axe(page) == []  # with the form open

    # The fields beyond title and abstract; the category and regions from the API's lists.
    category = page.get_by_label("Category", exact=True)
    expect(category.locator("option")).not_to_have_count(1)
    category.select_option("oceans")
    page.get_by_label("Licence (its identifier, such as CC-BY-4.0)", exact=True).fill("CC-BY-4.0")
    regions.select_option(["FRA", "ESP"])
    page.get_by_label("Reference date", exact=True).fill("2020-05-17")
    page.get_by_label("Kind of reference date", exact=True).select_option("revision")
    page.get_by_label("Temporal extent from", exact=True).fill("2019-01-01")
    page.get_by_label("Purpose", exact=True).fill("Tidal habitat survey")
    page.get_by_label("Restriction (its ISO code, such as otherRestrictions)", exact=True).fill("copyright")
    page.get_by_label("Supplemental information", exact=True).fill("Flown at spring tide.")
    page.get_by_label("Attribution", exact=True).fill("Coast office")
    page.get_by_label("DOI", exact=True).fill("10.1234/tidal.2020")
    page.get_by_label("Language (ISO 639-2 code, such as eng)", exact=True).fill("ita")
    page.get_by_label("Metadata authors", exact=True).fill("cartographer")
    page.get_by_role("button", name="Save the metadata").click()
    expect(page.locator("#edit-status")).to_have_text("Saved.")
    expect(page.locator("#edit-section")).to_be_visible()  # still open after the page is redrawn

    record = api.ok("GET", f"api/v2/datasets/{rid}")["dataset"]
    assert record["category"]["identifier"] == "oceans"
    assert record["license"]["identifier"] == "CC-BY-4.0"
    assert sorted(r["code"] for r in record["regions"]) == ["ESP", "FRA"]
    assert (record["date"][:10], record["date_type"]) == ("2020-05-17", "revision")
    assert record["temporal_extent_start"][:10] == "2019-01-01"
    assert (record["purpose"], record["attribution"], record["supplemental_information"]) == \
        ("Tidal habitat survey", "Coast office", "Flown at spring tide.")
    assert record["restriction_code_type"]["identifier"] == "copyright"
    assert (record["doi"], record["language"]) == ("10.1234/tidal.2020", "ita")
    assert [u["username"] for u in record["metadata_author"]] == ["cartographer"]
    assert record["title"] == "Tidal flats" and [k["name"] for k in record["keywords"]] == ["coast"]

    # After a reload, the metadata panel shows them.
    page.reload()
    page.wait_for_selector("#resource-view[data-ready='true']", state="attached")
    meta = page.locator("#resource-metadata")
    for shown in ("Oceans", "CC-BY-4.0", "France", "Spain", "2020-05-17 (revision)",
                  "2019-01-01 to …", "Tidal habitat survey", "copyright", "Flown at spring tide.",
                  "Coast office", "10.1234/tidal.2020", "ita", "Cara Tographer (cartographer)"):
        expect(meta).to_contain_text(shown)
    expect(meta).not_to_contain_text("Italy")
    expect(page.locator("#edit-section")).to_be_hidden()

    # A value the API refuses: shown by its field, read out, and the field focused.
    choose_edit(page, "Metadata")
    language = page.get_by_label("Language (ISO 639-2 code, such as eng)", exact=True)
    language.fill("e1")
    page.get_by_role("button", name="Save the metadata").click()
    note = page.locator("#edit-language-error")
    expect(note).to_contain_text("ISO 639 code")
    expect(language).to_be_focused()
    expect(language).to_have_attribute("aria-invalid", "true")
    expect(language).to_have_attribute("aria-describedby", "edit-language-error")
    expect(page.locator("#edit-error")).to_have_attribute("role", "alert")
    expect(page.locator("#edit-error")).to_contain_text("Not saved: language:")
    assert api.ok("GET", f"api/v2/resources/{rid}")["resource"]["language"] == "ita"
    assert _axe(page) == []  # with an error shown
    # Escape closes the pane and gives focus back to the menu button; so does Cancel.
    page.keyboard.press("Escape")
    expect(page.locator("#edit-section")).to_be_hidden()
    expect(button).to_be_focused()
    choose_edit(page, "Permissions")
    expect(page.locator("#permissions-section")).to_be_visible()
    page.locator("#permissions-section").get_by_role("button", name="Close").click()
    expect(page.locator("#permissions-section")).to_be_hidden()
    expect(button).to_be_focused()
    assert not (watch.dialogs or watch.page_errors), watch


def test_thumbnail_from_an_image_file(live_server, api, data, new_page):
    rid = data["tidal"]
    page, watch = new_page()
    _open(page, live_server, "cartographer", "dataset", rid)
    before = api.ok("GET", f"api/v2/resources/{rid}")["resource"]["thumbnail_url"]
    choose_edit(page, "Thumbnail")
    field = page.get_by_label("Image (PNG or JPEG, at most 1 MB)", exact=True)
    expect(field).to_be_focused()
    # Not an image: refused in words, nothing changed.
    field.set_input_files({"name": "notes.png", "mimeType": "image/png", "buffer": b"not a picture"})
    page.get_by_role("button", name="Upload the thumbnail").click()
    expect(page.locator("#thumbnail-error")).to_contain_text("The thumbnail was not changed:")
    assert api.ok("GET", f"api/v2/resources/{rid}")["resource"]["thumbnail_url"] == before
    field.set_input_files({"name": "tide.png", "mimeType": "image/png", "buffer": samples()["png"]})
    page.get_by_role("button", name="Upload the thumbnail").click()
    expect(page.locator("#thumbnail-status")).to_have_text("The thumbnail from tide.png is applied.")
    expect(page.locator("#thumbnail-error")).to_have_text("")
    after = api.ok("GET", f"api/v2/resources/{rid}")["resource"]["thumbnail_url"]
    assert after and after != before
    shown = page.locator("#thumbnail-current")
    expect(shown).to_have_attribute("src", after)
    image = api.request("GET", after[len(live_server.url):])
    assert image.status_code == 200 and image.headers["content-type"] == "image/png"
    page.keyboard.press("Escape")
    expect(page.locator("#thumbnail-section")).to_be_hidden()
    expect(page.locator("#edit-menu-button")).to_be_focused()
    assert not (watch.dialogs or watch.page_errors), watch


def test_delete_asks_first_and_cancel_keeps_the_dataset(live_server, api, data, new_page):
    rid = data["dunes"]
    page, watch = new_page()
    _open(page, live_server, "cartographer", "dataset", rid)
    button = page.locator("#edit-menu-button")
    button.focus()
    page.keyboard.press("ArrowUp")  # the last item: Delete
    expect(page.get_by_role("menuitem", name="Delete")).to_be_focused()
    page.keyboard.press("Enter")
    pane = page.locator("#delete-section")
    expect(pane).to_contain_text("Delete “Coastal dunes” for good?")
    expect(pane).to_contain_text("its data and the files uploaded with it")
    expect(pane).to_contain_text("This cannot be undone.")
    # Focus goes to the harmless choice; Enter on it keeps the dataset.
    expect(page.get_by_role("button", name="Cancel", exact=True)).to_be_focused()
    page.keyboard.press("Enter")
    expect(pane).to_be_hidden()
    expect(button).to_be_focused()
    assert api.request("GET", f"api/v2/resources/{rid}").status_code == 200
    choose_edit(page, "Delete")
    page.get_by_role("button", name="Yes, delete it").click()
    page.wait_for_url(f"{live_server.url}?deleted={rid}")
    expect(page.locator("#catalogue-notice")).to_have_text("“Coastal dunes” was deleted.")
    assert api.request("GET", f"api/v2/resources/{rid}").status_code == 404
    assert not (watch.dialogs or watch.page_errors), watch  # no window.confirm either


def test_no_edit_menu_without_the_right(live_server, api, data, new_page):
    for username in ("onlooker", None):
        page, watch = new_page()
        if username:
            _open(page, live_server, username, "dataset", data["tidal"])
        else:
            page.goto(f"{live_server.url}catalogue/#/dataset/{data['tidal']}")
            page.wait_for_selector("#resource-view[data-ready='true']", state="attached")
        expect(page.locator("#resource-title")).to_have_text("Tidal flats")
        expect(page.locator("#edit-menu")).to_be_hidden()
        expect(page.get_by_role("button", name="Edit", exact=True)).to_have_count(0)
        expect(page.locator("#edit-panel .edit-pane:visible")).to_have_count(0)
        assert not (watch.dialogs or watch.page_errors), (username, watch)


def test_menu_and_form_fit_a_phone(live_server, data, new_page):
    page, watch = new_page(bypass_csp=True)
    page.set_viewport_size(PHONE)
    _open(page, live_server, "cartographer", "dataset", data["tidal"])
    page.locator("#edit-menu-button").click()
    expect(page.locator("#edit-menu-list")).to_be_visible()
    assert beyond_width(page, PHONE["width"]) == []
    page.get_by_role("menuitem", name="Metadata", exact=True).click()
    page.wait_for_selector("#edit-regions[data-ready='true']", state="attached")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    assert beyond_width(page, PHONE["width"]) == []
    assert _axe(page) == []
    choose_edit(page, "Permissions")
    page.wait_for_selector("#permissions-section[data-ready='true']", state="attached")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    assert not (watch.dialogs or watch.page_errors), watch
