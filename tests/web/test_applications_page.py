"""The staff page of OAuth2 applications in Chromium, against a live server: a staff member
registers a client, sees its secret once, and the client gets a Bearer token from /o/token/;
non-staff and anonymous visitors get a message and no data (the API refuses them too)."""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import expect

from tests.factories import PASSWORD, make_user
from tests.web.test_composer import log_in
from tests.web.test_pages import XSS_PAYLOADS, _axe

pytestmark = pytest.mark.usefixtures("chromium_path")


@pytest.fixture(scope="module")
def people(module_db):
    make_user(module_db, "keeper", is_staff=True)
    make_user(module_db, "walker")
    return "keeper", "walker"


def test_staff_register_see_the_secret_once_and_delete(live_server, people, new_page):
    page, watch = new_page()
    log_in(page, live_server, "keeper", PASSWORD, "account/applications")
    expect(page.locator("#applications[data-ready='true']")).to_be_attached()
    expect(page.locator("#applications-empty")).to_be_visible()
    name = f"scripts {XSS_PAYLOADS[0]}"
    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_role("checkbox", name="Client credentials").check()
    page.get_by_label("Owner").fill("keeper")
    page.get_by_role("button", name="Register").click()
    expect(page.locator("#application-created")).to_be_visible()
    client_id = page.locator("#created-client-id").text_content()
    secret = page.locator("#created-client-secret").text_content()
    assert client_id and secret
    row = page.locator(f"tr[data-client-id='{client_id}']")
    expect(row).to_contain_text(name)  # text, not markup
    expect(row).to_contain_text("password, client_credentials")
    assert page.locator("main img, main script").count() == 0

    # The client works: its token acts as the owner.
    token = httpx.post(f"{live_server.url}o/token/", timeout=30, data={
        "grant_type": "client_credentials", "client_id": client_id, "client_secret": secret})
    assert token.status_code == 200, token.text
    claims = httpx.get(f"{live_server.url}o/userinfo/", timeout=30,
                       headers={"Authorization": f"Bearer {token.json()['access_token']}"})
    assert claims.json()["preferred_username"] == "keeper"

    # The secret is not shown again.
    page.reload()
    expect(page.locator("#applications[data-ready='true']")).to_be_attached()
    expect(page.locator("#application-created")).to_be_hidden()
    assert secret not in page.content()

    # A refusal is told, nothing is created.
    page.get_by_label("Name", exact=True).fill("browser app")
    page.get_by_label("Client type").select_option("public")
    page.get_by_role("checkbox", name="Password").uncheck()
    page.get_by_role("checkbox", name="Client credentials").check()
    page.get_by_role("button", name="Register").click()
    expect(page.locator("#application-error")).to_contain_text(
        "a public client cannot use the client_credentials grant")
    expect(page.locator("#applications-rows tr")).to_have_count(1)

    page.get_by_role("button", name=f"Delete {name}").click()
    expect(page.locator("#applications-empty")).to_be_visible()
    expect(page.locator("#applications-rows tr")).to_have_count(0)
    refused = httpx.post(f"{live_server.url}o/token/", timeout=30, data={
        "grant_type": "client_credentials", "client_id": client_id, "client_secret": secret})
    assert refused.status_code == 401
    # the refused registration is the page's only failed request
    assert not (watch.dialogs or watch.page_errors), watch
    assert watch.failed_responses == [f"400 {live_server.url}api/v2/oauth-applications"], watch


def test_non_staff_and_anonymous_visitors_get_a_message_and_no_data(live_server, people, new_page):
    page, watch = new_page(bypass_csp=True)  # for axe
    page.goto(f"{live_server.url}account/applications")
    expect(page.locator("#applications-login")).to_be_visible()
    assert _axe(page) == []

    log_in(page, live_server, "walker", PASSWORD, "account/applications")
    expect(page.locator("#applications-forbidden")).to_have_text(
        "OAuth2 applications are registered by staff members only.")
    expect(page.locator("#applications")).to_be_hidden()
    assert _axe(page) == []
    assert watch.clean, watch
    # The API behind the page refuses them whatever the page shows.
    walker = httpx.get(f"{live_server.url}api/v2/oauth-applications", auth=("walker", PASSWORD), timeout=30)
    assert walker.status_code == 403
    anonymous = httpx.get(f"{live_server.url}api/v2/oauth-applications", timeout=30)
    assert anonymous.status_code == 401 and "applications" not in anonymous.text
