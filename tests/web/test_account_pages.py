"""The account pages in Chromium: "forgot password" from the login page, the mailed one-time
link (a real SMTP receiver), the new password, and the pages' fit on a phone and axe-core check.

One live server (sending mail to the module's SMTP receiver), browser and user per module and backend.
"""

from __future__ import annotations

import re
import time

import httpx
import pytest
from playwright.sync_api import expect

from tests.conftest import ADMIN_PASSWORD
from tests.factories import PASSWORD, make_user
from tests.support.processes import serving
from tests.support.services import smtp_receiver
from tests.web.test_pages import _axe

pytestmark = pytest.mark.usefixtures("chromium_path")

NEW_PASSWORD = "river-Bank-2026"
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def mail_site(base_app, make_settings, tmp_path_factory):
    """``(server, mailbox)``: a live server whose mail goes to a receiver of this module."""
    with smtp_receiver() as (mailbox, port):
        log = tmp_path_factory.mktemp("mail-site") / "server.log"
        with serving(make_settings, log, own_site_url=True, EMAIL_HOST="127.0.0.1", EMAIL_PORT=port,
                     DEFAULT_FROM_EMAIL="site@example.org") as server:
            yield server, mailbox


@pytest.fixture(scope="module")
def reader(module_db):
    return make_user(module_db, "reader", email="reader@example.org")


def beyond_width(page, width: int) -> list[str]:
    """The elements of the page's own content (its <main>) reaching past ``width`` pixels outside
    any box that scrolls them (a wide table in its scrolling wrapper is fine): what would make a
    phone scroll sideways. The site header is checked with the layout."""
    return page.evaluate("""(width) => {
        const clipped = (e) => {
            for (let p = e.parentElement; p && p.tagName !== 'MAIN'; p = p.parentElement) {
                if (getComputedStyle(p).overflowX !== 'visible') return true;
            }
            return false;
        };
        return [...document.querySelectorAll('main, main *')]
            .filter((e) => e.getBoundingClientRect().right > width + 0.5 && !clipped(e))
            .map((e) => `${e.tagName.toLowerCase()}#${e.id} ${Math.round(e.getBoundingClientRect().right)}`);
    }""", width)


def _wait_for_mail(mailbox, count: int) -> None:
    deadline = time.monotonic() + 15
    while len(mailbox.messages) < count:
        assert time.monotonic() < deadline, "no message arrived"
        time.sleep(0.1)


def _login_status(server, password: str) -> int:
    return httpx.post(f"{server.url}account/login", json={"username": "reader", "password": password},
                      timeout=30).status_code


def test_a_forgotten_password_is_reset_through_the_mailed_link(mail_site, reader, new_page):
    server, mailbox = mail_site
    page, watch = new_page()
    page.goto(f"{server.url}account/login")
    page.get_by_role("link", name="Forgot your password?").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Forgotten password")
    page.get_by_label("E-mail").fill("reader@example.org")
    page.get_by_role("button", name="Send the link").click()
    done = page.locator("#reset-done")
    expect(done).to_contain_text("If an account has this e-mail address")
    expect(done).to_be_focused()

    _wait_for_mail(mailbox, 1)
    recipients, message = mailbox.messages[0]
    assert recipients == ["reader@example.org"]
    link = re.search(r"http://\S+/account/password/reset/key/\S+", message.get_payload(decode=True).decode())
    assert link and link.group(0).startswith(server.url), message.get_payload()

    page.goto(link.group(0))
    expect(page.locator("#reset-key-account")).to_have_text("Account: reader")
    page.get_by_label("New password", exact=True).fill(NEW_PASSWORD)
    page.get_by_label("New password again").fill("something-else-1")
    page.get_by_role("button", name="Set the password").click()
    expect(page.locator("#reset-key-error")).to_have_text("The two passwords differ.")
    page.get_by_label("New password again").fill(NEW_PASSWORD)
    page.get_by_role("button", name="Set the password").click()
    expect(page.locator("#reset-key-done")).to_be_focused()
    assert watch.clean, watch

    page.locator("#reset-key-done").get_by_role("link", name="log in").click()
    page.get_by_label("Username").fill("reader")
    page.get_by_label("Password").fill(NEW_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.locator("#account-nav")).to_contain_text("Signed in as reader")
    assert _login_status(server, PASSWORD) == 401

    # A second visit of the same link is refused in words, with no form to fill.
    page.goto(link.group(0))
    expect(page.locator("#reset-key-invalid")).to_contain_text("invalid, was already used or has expired")
    expect(page.locator("#reset-key-form")).to_be_hidden()


def test_account_pages_fit_a_phone_and_pass_axe(mail_site, new_page):
    server, _mailbox = mail_site
    page, _ = new_page(bypass_csp=True)  # axe is injected as an inline script
    page.set_viewport_size(PHONE)
    for path, ready in (("account/login", "#login-form"), ("account/signup", "#signup-form"),
                        ("account/profile", "#profile-anonymous"), ("account/password/reset", "#reset-form"),
                        ("account/password/reset/key/not-a-key", "#reset-key-invalid")):
        page.goto(f"{server.url}{path}")
        expect(page.locator(ready)).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], path
        assert beyond_width(page, PHONE["width"]) == [], path
        assert _axe(page) == [], path
    # The profile of a signed-in user, with its token form.
    response = page.request.post(f"{server.url}account/login",
                                 data={"username": "admin", "password": ADMIN_PASSWORD})
    assert response.ok, response.text()
    page.goto(f"{server.url}account/profile")
    expect(page.locator("#token-section")).to_have_attribute("data-ready", "true")
    assert beyond_width(page, PHONE["width"]) == []
    assert _axe(page) == []
