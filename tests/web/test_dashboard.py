"""The staff monitoring dashboard in Chromium, over real traffic recorded by the live server.

The module sends catalogue and OWS requests to the live server, one of which fails on a dataset
whose stored data were broken behind the catalogue's back; once the server has written its
captured requests (the failure shows in the exceptions list), ``cartotheca monitoring collect``
aggregates them, as an operator would. The page must then show what the monitoring API answers.

One live server, browser and data set per module and backend (startup dominates the run time).
"""

from __future__ import annotations

import datetime as dt
import json
import socket
import subprocess
import sys
import time
from collections.abc import Callable

import httpx
import pytest
from playwright.sync_api import expect
from sqlalchemy import create_engine, func, select, text

from cartotheca.db.base import utcnow
from cartotheca.db.models import Dataset, RequestEvent
from cartotheca.geodata.storage.geopackage import GeoPackageStore
from cartotheca.monitoring.periods import align_end
from tests.conftest import ADMIN_PASSWORD
from tests.factories import PASSWORD, make_user
from tests.geodata.fixtures import publish_file, write_polygons
from tests.support.processes import outside_environment, settings_env
from tests.web.test_account_pages import beyond_width
from tests.web.test_pages import XSS_PAYLOADS, _axe

pytestmark = pytest.mark.usefixtures("chromium_path")

XSS = XSS_PAYLOADS[0]
MONITORING = "monitoring/api"
TRAFFIC = 7  # successful requests the module sends before the failing one
INJECTED = "main img, main script, main iframe, #exception-detail svg, main a[href^='javascript']"


def _on_stored_table(datastore_url: str, statement: str) -> None:
    store = create_engine(datastore_url, isolation_level="AUTOCOMMIT")
    try:
        with store.connect() as conn:
            conn.execute(text(statement))
    finally:
        store.dispose()


def break_stored_data(db, settings, datastore_url: str | None, dataset_id: int) -> Callable[[], None]:
    """Damage a dataset's stored data the way an outside hand could: a GeoPackage overwritten,
    or a PostGIS column renamed. Reading its features then fails inside the server. Returns
    what removes the damaged data at the end."""
    dataset = db.get(Dataset, dataset_id)
    if dataset.storage == "geopackage":
        stored = GeoPackageStore.for_settings(settings).path(dataset)
        assert stored.is_file(), stored
        stored.write_bytes(b"not a GeoPackage any more\n" * 64)
        return lambda: stored.unlink(missing_ok=True)
    schema, _, table = dataset.location.partition(".")
    qualified = f'"{schema}"."{table}"'
    _on_stored_table(datastore_url, f'ALTER TABLE {qualified} RENAME COLUMN "name" TO "renamed"')
    return lambda: _on_stored_table(datastore_url, f"DROP TABLE IF EXISTS {qualified}")


def run_collection(make_settings, live_server, interval: int) -> dt.datetime:
    """``cartotheca monitoring collect`` with the live server's settings, up to the end of the
    current period; returns that end."""
    until = align_end(utcnow(), interval)
    env = outside_environment()
    env.update(settings_env(make_settings(SITEURL=live_server.url)), CARTOTHECA_LOG_LEVEL="warning")
    done = subprocess.run(
        [sys.executable, "-m", "cartotheca.cli", "monitoring", "collect", "--until", until.isoformat()],
        env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Aggregated " in done.stdout, done.stdout
    return until


def wait_for_exception(api, path_prefix: str, timeout: float = 30.0) -> dict:
    """The captured failure of a request to ``path_prefix``, once the server has written it
    (it flushes its captured requests every few seconds)."""
    deadline = time.monotonic() + timeout
    while True:
        for item in api.ok("GET", f"{MONITORING}/exceptions/")["exceptions"]:
            detail = api.ok("GET", f"{MONITORING}/exceptions/{item['id']}/")
            if detail["request"] and detail["request"]["request"]["path"].startswith(path_prefix):
                return detail
        assert time.monotonic() < deadline, "the failing request was not captured"
        time.sleep(0.5)


def create_check(api, name: str, description: str, max_ms: float) -> dict:
    thresholds = [["response.time", "max_value", False, False, False, False, 0, None, None,
                   "Response time is above"]]
    check = api.ok("POST", f"{MONITORING}/notifications/", data={
        "name": name, "description": description, "severity": "error",
        "user_thresholds": json.dumps(thresholds)})["data"]
    api.ok("POST", f"{MONITORING}/notifications/config/{check['id']}/",
           data={"response.time.max_value": str(max_ms)})
    return check


@pytest.fixture(scope="module")
def traffic(live_server, api, module_db, base_app, make_settings, datastore_url, tmp_path_factory):
    settings = base_app.state.cartotheca.settings
    owner = make_user(module_db, "surveyor")
    make_user(module_db, "visitor")
    broken = publish_file(module_db, settings, owner, write_polygons(tmp_path_factory.mktemp("dashboard")),
                          title="Broken polygons")
    slow = create_check(api, f"Slow responses {XSS}", f"Any response slower than 0.0001 ms {XSS}", 0.0001)
    calm = create_check(api, "Calm responses", "Responses slower than ten minutes", 600000)

    for _ in range(4):
        api.ok("GET", "api/v2/resources")
    for service in ("WMS", "WFS"):
        response = api.request("GET", "ows", params={"service": service, "request": "GetCapabilities"})
        assert response.status_code == 200, response.text[:300]
    features = {"service": "WFS", "version": "2.0.0", "request": "GetFeature",
                "typeNames": broken.alternate, "outputFormat": "application/json",
                "cql_filter": f"name = '{XSS}'"}
    # Read once while intact (the server now knows the layer's columns), then damaged.
    assert api.ok("GET", "ows", params=features)["features"] == []
    remove_damaged = break_stored_data(module_db, settings, datastore_url, broken.id)
    # The client's user agent is shown with the failure: one more text from outside.
    failing = httpx.get(f"{api.base}ows", headers={"User-Agent": XSS, "Authorization": f"Basic {api.token}"},
                        timeout=30, params=features)
    assert failing.status_code == 500, failing.text[:300]
    error = wait_for_exception(api, "/ows")
    services = api.ok("GET", f"{MONITORING}/services/")["services"]
    interval = next(s["check_interval"] for s in services if s["type"] == "core")
    collected_until = run_collection(make_settings, live_server, interval)
    yield {"error": error, "slow": slow, "calm": calm, "interval": interval,
           "collected_until": collected_until}
    remove_damaged()


def open_dashboard(page, live_server) -> None:
    """Log in as the admin through the login form, which the anonymous dashboard links to."""
    page.goto(f"{live_server.url}monitoring/")
    expect(page.locator("#dashboard-login")).to_be_visible()
    expect(page.locator("#dashboard")).to_be_hidden()
    link = page.locator("#dashboard-login-link")
    assert link.get_attribute("href") == "/account/login?next=/monitoring/"
    link.click()
    page.get_by_label("Username").fill("admin")
    page.get_by_label("Password").fill(ADMIN_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}monitoring/")
    page.wait_for_selector("#dashboard[data-ready='true']", state="attached")


def stamp(value: str) -> dt.datetime:
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).replace(tzinfo=None)


def api_series(api, metric: str, last: int, interval: int) -> dict[str, list[dict]]:
    body = api.ok("GET", f"{MONITORING}/metric_data/{metric}/", params={"last": last, "interval": interval})
    return {p["valid_from"]: p["data"] for p in body["data"]["data"]}


def page_table(page, column: int = 1) -> dict[str, float]:
    """The traffic data table: interval start → the number shown in ``column`` (1: requests,
    2: average response time)."""
    rows = page.locator("#traffic-table tbody tr")
    return {rows.nth(i).locator("time").get_attribute("datetime"):
            float(rows.nth(i).locator("td").nth(column).text_content().replace(",", ""))
            for i in range(rows.count())}


def test_dashboard_shows_what_the_monitoring_api_answers(live_server, api, traffic, new_page, backend):
    page, watch = new_page()
    open_dashboard(page, live_server)
    expect(page.locator("#staff-nav")).to_be_visible()
    traffic_section = page.locator("#traffic")
    expect(traffic_section).to_have_attribute("data-period", "hour")
    # The last hour in intervals of the services' collection period.
    assert traffic_section.get_attribute("data-interval") == str(traffic["interval"])
    shown = page_table(page)
    counts = api_series(api, "request.count", 3600, traffic["interval"])
    # Periods up to the collection run are final; later ones may still be aggregated by the
    # server's own cycle between the page's request and this one.
    settled = {start for start in counts if stamp(start) < traffic["collected_until"]}
    expected = {start: sum(float(r["val"]) for r in rows) for start, rows in counts.items()
                if rows and start in settled}
    assert {start: value for start, value in shown.items() if start in settled} == expected
    assert sum(expected.values()) >= TRAFFIC + 1
    # One bar and one point per interval with data, at those intervals.
    bars = page.locator("#count-chart rect.chart-bar")
    points = page.locator("#time-chart circle.chart-point")
    assert sorted(bars.nth(i).get_attribute("data-from") for i in range(bars.count())) == sorted(shown)
    assert sorted(points.nth(i).get_attribute("data-from") for i in range(points.count())) == sorted(shown)
    assert traffic["interval"] == 60  # the default collection interval
    assert page.locator("#count-chart svg > title").text_content() == "Requests per minute, the last hour"
    desc = page.locator("#count-chart svg > desc").text_content()
    assert f"{len(shown)} of " in desc
    # The average response time of each interval, weighted by the samples of each service.
    times = api_series(api, "response.time", 3600, traffic["interval"])
    shown_times = page_table(page, column=2)
    for start in expected:
        rows = times[start]
        samples = sum(r["samples_count"] for r in rows)
        average = sum(float(r["val"]) * r["samples_count"] for r in rows) / samples
        assert shown_times[start] == pytest.approx(average, abs=0.051)

    # Hosts and services as listed by the API, the server among them.
    hosts = api.ok("GET", f"{MONITORING}/hosts/")["hosts"]
    services = api.ok("GET", f"{MONITORING}/services/")["services"]
    host_rows = page.locator("#hosts-table tbody tr")
    expect(host_rows).to_have_text([f"{h['name']}{h['ip']}" for h in hosts], use_inner_text=False)
    service_rows = page.locator("#services-table tbody tr")
    expect(service_rows).to_have_count(len(services))
    for row, service in enumerate(services):
        cells = service_rows.nth(row).locator("td")
        assert [cells.nth(i).inner_text() for i in (0, 1, 2, 4)] == [
            service["name"], service["type"], service["host"], str(service["check_interval"])]
    # This machine runs the live server: its catalogue and map server services.
    assert {(s["type"], s["host"]) for s in services} >= {("core", socket.gethostname()),
                                                          ("mapserver", socket.gethostname())}

    # The captured failure, its text from the API shown as text only.
    error = traffic["error"]
    link = page.locator(f"#exceptions-list a[data-id='{error['id']}']")
    expect(link).to_have_text(error["error_type"])
    link.click()
    panel = page.locator("#exception-detail")
    expect(panel).to_be_visible()
    expect(page.locator("#exception-message")).to_have_text(error["error_message"])
    if backend == "postgresql":
        # PostgreSQL's error quotes the statement's parameters: the filter's payload.
        assert XSS in error["error_message"]
    expect(page.locator("#exception-request")).to_have_text(f"GET {error['request']['request']['path']}")
    expect(panel.locator("dd", has_text=XSS).last).to_have_text(XSS)  # the user agent
    expect(page.locator("#exception-trace")).to_have_text(error["error_data"])
    assert "Traceback" in error["error_data"]

    # The checks created through the API, and their status.
    rows = page.locator("#checks-table tbody tr")
    expect(rows).to_have_count(2)
    slow, calm = rows.filter(has_text=traffic["slow"]["name"]), rows.filter(has_text="Calm responses")
    expect(slow.locator("td").nth(0)).to_have_text(traffic["slow"]["name"])
    expect(slow.locator(".check-status")).to_have_text("Failing")
    expect(calm.locator(".check-status")).to_have_text("OK")
    expect(calm.locator(".problems li")).to_have_count(0)
    expect(page.locator("#health-level")).to_have_text("error")
    status = api.ok("GET", f"{MONITORING}/status/")["data"]
    assert [s["check"]["id"] for s in status] == [traffic["slow"]["id"]]
    # A problem per service whose latest response time breaks the threshold.
    messages = [p["message"] for p in status[0]["problems"]]
    assert messages and set(messages) == {"Response time is above 0.0001 ms"}
    expect(slow.locator(".problems li")).to_have_text(messages)

    assert page.locator(INJECTED).count() == 0
    page.wait_for_timeout(100)  # an onerror or onload handler would have fired by now
    assert watch.clean, watch


def test_period_and_exception_details_from_the_keyboard(live_server, api, traffic, new_page):
    page, watch = new_page(bypass_csp=True)  # for axe
    open_dashboard(page, live_server)
    assert _axe(page) == []

    # The period buttons: Tab from one to the next, Enter to choose.
    page.locator(".period-choice button[data-period='hour']").focus()
    page.keyboard.press("Tab")
    day = page.locator(".period-choice button[data-period='day']")
    expect(day).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#traffic")).to_have_attribute("data-period", "day")
    expect(page.locator("#traffic")).to_have_attribute("data-ready", "true")
    expect(day).to_have_attribute("aria-pressed", "true")
    hour = page.locator(".period-choice button[data-period='hour']")
    expect(hour).to_have_attribute("aria-pressed", "false")
    assert page.locator("#traffic").get_attribute("data-interval") == "3600"
    hourly = api_series(api, "request.count", 86400, 3600)
    with_data = sorted(start for start, rows in hourly.items() if rows)
    bars = page.locator("#count-chart rect.chart-bar")
    shown = sorted(bars.nth(i).get_attribute("data-from") for i in range(bars.count()))
    # The hour being aggregated may gain its first data between the two reads.
    assert shown == with_data or shown == with_data[:-1] or shown[:-1] == with_data
    assert shown
    assert page.locator("#count-chart svg > title").text_content() == "Requests per hour, the last day"
    page.keyboard.press("Enter")  # choosing it again keeps it
    expect(page.locator("#traffic")).to_have_attribute("data-period", "day")
    page.locator(".period-choice button[data-period='week']").focus()
    page.keyboard.press("Space")
    expect(page.locator("#traffic")).to_have_attribute("data-period", "week")
    expect(page.locator("#traffic")).to_have_attribute("data-ready", "true")
    assert page.locator("#traffic").get_attribute("data-interval") == "86400"
    expect(page.locator("#count-chart rect.chart-bar")).not_to_have_count(0)

    # An exception's details: Enter on its link opens the panel and moves the focus there;
    # the close button brings the focus back to the link.
    link = page.locator(f"#exceptions-list a[data-id='{traffic['error']['id']}']")
    link.focus()
    page.keyboard.press("Enter")
    heading = page.locator("#exception-detail-heading")
    expect(heading).to_be_focused()
    expect(page.locator("#exception-message")).to_have_text(traffic["error"]["error_message"])
    page.locator("#exception-detail summary").focus()
    page.keyboard.press("Enter")  # the stack trace
    expect(page.locator("#exception-trace")).to_be_visible()
    # The trace scrolls: it takes the focus (arrow keys scroll it), then the close button.
    page.keyboard.press("Tab")
    expect(page.locator("#exception-trace")).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.locator("#exception-close")).to_be_focused()
    assert _axe(page) == []  # with the details, the trace and the data table's disclosure
    page.keyboard.press("Enter")
    expect(page.locator("#exception-detail")).to_be_hidden()
    expect(link).to_be_focused()
    page.locator("#traffic-details summary").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#traffic-table")).to_be_visible()
    assert _axe(page) == []
    assert not (watch.dialogs or watch.page_errors or watch.failed_responses), watch


def test_non_staff_and_anonymous_visitors_get_a_message_and_no_data(live_server, traffic, new_page):
    page, watch = new_page(bypass_csp=True)  # for axe
    asked = []
    page.on("request", lambda r: asked.append(r.url) if "/monitoring/api/" in r.url else None)
    page.goto(f"{live_server.url}monitoring/")
    expect(page.locator("#dashboard-login")).to_be_visible()
    assert _axe(page) == []

    response = page.request.post(f"{live_server.url}account/login",
                                 data={"username": "visitor", "password": PASSWORD})
    assert response.ok, response.text()
    page.goto(f"{live_server.url}monitoring/")
    expect(page.locator("#account-nav")).to_contain_text("Signed in as visitor")
    forbidden = page.locator("#dashboard-forbidden")
    expect(forbidden).to_be_visible()
    expect(forbidden).to_have_text("The monitoring dashboard is for staff members only.")
    expect(page.locator("#dashboard")).to_be_hidden()
    expect(page.locator("#dashboard-login")).to_be_hidden()
    expect(page.locator("#staff-nav")).to_be_hidden()
    assert page.locator("#dashboard tbody tr, #dashboard svg, #exceptions-list li").count() == 0
    assert asked == []
    assert _axe(page) == []
    assert watch.clean, watch


def breakdown_cell(page, table: str, key: str, column: int) -> float:
    row = page.locator(f"#{table} tbody tr").filter(has=page.locator("td").first.filter(has_text=key))
    return float(row.first.locator("td").nth(column).inner_text().replace(",", "").rstrip(" %"))


def written_requests(db, path_prefix: str) -> int:
    db.rollback()  # a fresh snapshot: the live server writes them
    return db.scalar(select(func.count()).select_from(RequestEvent)
                     .where(RequestEvent.request_path.startswith(path_prefix)))


def test_breakdown_error_rate_axes_and_auto_refresh(live_server, api, traffic, new_page, make_settings,
                                                    module_db):
    page, watch = new_page(bypass_csp=True)  # for axe
    page.set_viewport_size({"width": 390, "height": 844})
    response = page.request.post(f"{live_server.url}account/login",
                                 data={"username": "admin", "password": ADMIN_PASSWORD})
    assert response.ok, response.text()
    page.goto(f"{live_server.url}monitoring/?refresh=5")
    page.wait_for_selector("#dashboard[data-ready='true']", state="attached")
    expect(page.locator("#breakdown")).to_have_attribute("data-ready", "true")

    # Both axes of each chart say what they measure; the time axis names interval starts.
    for chart, axis in (("count-chart", "Requests"), ("time-chart", "Milliseconds"),
                        ("error-chart", "Errors (% of requests)")):
        expect(page.locator(f"#{chart} .y-axis-title")).to_have_text(axis)
        expect(page.locator(f"#{chart} .x-axis-title")).to_have_text("Time (UTC), per minute")
        assert page.locator(f"#{chart} .x-tick").count() >= 1
    expect(page.locator("#error-chart svg > title")).to_have_text("Error rate per minute, the last hour")

    # Per service and per endpoint, as the monitoring API sums them over the hour.
    window = {"last": 3600, "interval": traffic["interval"]}
    by_type = api.ok("GET", f"{MONITORING}/metric_data/request.count/",
                     params={**window, "group_by": "event_type"})["data"]["data"]
    wfs_requests = sum(float(r["val"]) for p in by_type for r in p["data"] if r["event_type"] == "OWS:WFS")
    assert wfs_requests >= 3
    assert breakdown_cell(page, "service-breakdown", "WFS", 1) >= wfs_requests
    # The GetFeature that failed on the damaged dataset is the WFS's error.
    assert breakdown_cell(page, "service-breakdown", "WFS", 2) >= 1
    assert breakdown_cell(page, "service-breakdown", "API and pages", 1) >= 4
    assert breakdown_cell(page, "endpoint-breakdown", "/ows", 2) >= 1
    assert int(page.locator("#error-figure").get_attribute("data-errors")) >= 1
    assert beyond_width(page, 390) == []
    assert _axe(page) == []

    # New requests, once collected, show without a reload. A period is aggregated once: they
    # go into one after the module's collection run.
    wait = (traffic["collected_until"] - utcnow()).total_seconds()
    if wait > 0:
        time.sleep(wait + 0.5)
    before = breakdown_cell(page, "endpoint-breakdown", "/api/v2/resources", 1)
    api_errors = breakdown_cell(page, "service-breakdown", "API and pages", 2)
    refreshed = int(page.locator("#dashboard").get_attribute("data-refreshes") or 0)
    written = written_requests(module_db, "/api/v2/resources")
    for _ in range(5):
        api.ok("GET", "api/v2/resources")
    assert api.request("GET", "api/v2/resources/99999999").status_code == 404
    # The server writes its captured requests every few seconds.
    deadline = time.monotonic() + 30
    while written_requests(module_db, "/api/v2/resources") < written + 6:
        assert time.monotonic() < deadline, "the new requests were not written"
        time.sleep(0.5)
    run_collection(make_settings, live_server, traffic["interval"])
    page.wait_for_function(
        """([before]) => [...document.querySelectorAll('#endpoint-breakdown tbody tr')].some((row) =>
            row.cells[0].textContent === '/api/v2/resources'
            && Number(row.cells[1].textContent.replaceAll(',', '')) >= before + 5)""",
        arg=[before], timeout=30_000)
    assert int(page.locator("#dashboard").get_attribute("data-refreshes")) > refreshed
    # The 404 among them counts as an error of the API (in the same refresh).
    assert breakdown_cell(page, "service-breakdown", "API and pages", 2) >= api_errors + 1

    # The pause, from the keyboard: no refresh while paused.
    toggle = page.get_by_role("button", name="Pause the auto-refresh")
    toggle.focus()
    page.keyboard.press("Enter")
    expect(page.locator("#refresh-toggle")).to_have_text("Resume the auto-refresh")
    paused_at = page.locator("#dashboard").get_attribute("data-refreshes")
    page.wait_for_timeout(6_000)
    assert page.locator("#dashboard").get_attribute("data-refreshes") == paused_at
    page.keyboard.press("Enter")
    expect(page.locator("#refresh-toggle")).to_have_text("Pause the auto-refresh")
    assert not (watch.dialogs or watch.page_errors or watch.failed_responses), watch
