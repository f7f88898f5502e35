"""Browser tests of the web pages: Playwright drives Debian's Chromium against a live server.

Without Chromium (or the ``playwright`` package) the browser tests are skipped outside CI and
fail in CI, as the PostgreSQL parametrisation does. One browser per module, one live server per
module and backend (``live_server``), and the module's data arranged once (``catalogue_data``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect, sync_playwright

from tests.conftest import BACKENDS, _clean
from tests.support.services import unavailable

CHROMIUM = os.environ.get("CARTOTHECA_TEST_CHROMIUM", "/usr/bin/chromium")
AXE_JS = Path(__file__).parent / "vendor" / "axe.min.js"
TIMEOUT_MS = 15_000
WEB_TESTS = Path(__file__).parent
# Modules whose pages show something only one database produces: they run on every backend.
ON_EVERY_BACKEND = frozenset({"test_dashboard.py"})


def pytest_collection_modifyitems(config, items) -> None:
    """The pages run the same script over the same API on either database, and the API's
    behaviour on each is tested under tests/api: the browser tests run on the first backend
    only (a live server and a browser per module and backend were most of the suite's time)."""
    skip = pytest.mark.skip(reason="the pages do not depend on the database; tests/api covers each")
    for item in items:
        backend = getattr(item, "callspec", None) and item.callspec.params.get("database_url")
        if (backend and backend != BACKENDS[0] and WEB_TESTS in item.path.parents
                and item.path.name not in ON_EVERY_BACKEND):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def chromium_path() -> str:
    if not Path(CHROMIUM).is_file():
        unavailable(f"Chromium not found at {CHROMIUM} (apt-get install chromium)")
    return CHROMIUM


@pytest.fixture(scope="module")
def browser(chromium_path) -> Iterator[Any]:
    # The suite shares two cores with other work: assertions wait as long as actions may.
    expect.set_options(timeout=TIMEOUT_MS)
    with sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=chromium_path, headless=True)
        try:
            yield launched
        finally:
            launched.close()


@dataclass
class PageWatch:
    """What a page did that the XSS and smoke checks look at: dialogs, errors, console errors."""

    dialogs: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    failed_responses: list[str] = field(default_factory=list)

    def attach(self, page) -> None:
        def on_dialog(dialog) -> None:
            self.dialogs.append(f"{dialog.type}: {dialog.message}")
            dialog.dismiss()

        page.on("dialog", on_dialog)
        page.on("pageerror", lambda error: self.page_errors.append(str(error)))
        page.on("console", lambda msg: self.console_errors.append(msg.text) if msg.type == "error" else None)
        page.on("response", lambda r: self.failed_responses.append(f"{r.status} {r.url}")
                if r.status >= 400 else None)

    @property
    def clean(self) -> bool:
        return not (self.dialogs or self.page_errors or self.console_errors or self.failed_responses)


@pytest.fixture
def new_page(browser) -> Iterator[Callable[..., tuple[Any, PageWatch]]]:
    """``page, watch = new_page()``: a fresh anonymous context (no cookies) and its watcher."""
    contexts = []

    def make(**options) -> tuple[Any, PageWatch]:
        context = browser.new_context(viewport={"width": 1200, "height": 900}, **options)
        context.set_default_timeout(TIMEOUT_MS)
        contexts.append(context)
        page = context.new_page()
        watch = PageWatch()
        watch.attach(page)
        return page, watch

    yield make
    for context in contexts:
        context.close()


@dataclass
class Api:
    """The public API of the live server, as the admin (HTTP Basic) or anonymously."""

    base: str
    token: str

    def request(self, method: str, path: str, *, anonymous: bool = False, **kwargs) -> httpx.Response:
        headers = {} if anonymous else {"Authorization": f"Basic {self.token}"}
        response = httpx.request(method, self.base + path.lstrip("/"), headers=headers, timeout=30, **kwargs)
        return response

    def ok(self, method: str, path: str, **kwargs) -> Any:
        response = self.request(method, path, **kwargs)
        assert response.status_code < 300, (method, path, response.status_code, response.text)
        return response.json() if response.content else None

    def wait_execution(self, started: dict[str, Any], timeout: float = 20.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            status = httpx.get(started["status_url"], headers={"Authorization": f"Basic {self.token}"},
                               timeout=10).json()
            if status.get("status") in ("finished", "failed"):
                assert status["status"] == "finished", status
                return status
            assert time.monotonic() < deadline, status
            time.sleep(0.1)


@pytest.fixture(scope="module")
def api(live_server, admin_basic_token) -> Api:  # noqa: F811
    return Api(live_server.url, admin_basic_token)


@pytest.fixture(scope="module")
def module_db(base_app) -> Iterator[Any]:
    """A session on the test database for arranging a module's data; cleaned after the module."""
    session = base_app.state.cartotheca.sessions()
    try:
        yield session
    finally:
        session.close()
        _clean(base_app.state.cartotheca.engine)
