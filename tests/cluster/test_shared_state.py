"""What one node does is what the other node shows at its next request: a cookie session and its
CSRF token, a password change, a new style, new data, a permission change and a deletion made
through node A are used or drawn by node B, which had verified the password or drawn the dataset
before. Everything they share goes through the database; each node has an empty data folder of
its own."""

from __future__ import annotations

import base64
import time

import httpx
import pytest
import sqlalchemy as sa
from lxml import etree

from cartotheca.api.deps import CSRF_COOKIE, SESSION_COOKIE
from tests.support.cluster import ADMIN_PASSWORD, ADMIN_USER
from tests.support.cluster_data import (
    EAST,
    TRANSPARENT,
    UPLOAD_URL,
    WEST,
    dataset_named,
    fill_sld,
    get_map,
    rgba,
    upload,
    wait_execution,
    west_and_east,
    write_square,
)
from tests.support.pixels import pixels

RED, BLUE = "#ff0000", "#0000ff"

# Every cluster test runs in the one xdist worker that runs the cluster (conftest.py).
pytestmark = [pytest.mark.cluster, pytest.mark.xdist_group("cluster")]


@pytest.fixture(scope="module")
def node_a(cluster, admin):
    with httpx.Client(base_url=cluster.a.url, headers=admin, timeout=120) as client:
        yield client


def data_tables(cluster) -> set[str]:
    """The tables of the PostGIS datastore (one per stored dataset)."""
    engine = sa.create_engine(cluster.datastore_url)
    try:
        return set(sa.inspect(engine).get_table_names(schema="public")) - {"spatial_ref_sys"}
    finally:
        engine.dispose()


def wait_dropped(cluster, tables: set[str], timeout: float = 30.0) -> None:
    """Until none of ``tables`` is left (dropped once the change on A committed), although B's
    pool holds a map that drew them."""
    deadline = time.monotonic() + timeout
    while tables & data_tables(cluster) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not tables & data_tables(cluster)


def published(node_a, tmp_path, name: str) -> dict:
    """A red square over the west half, uploaded through node A."""
    upload(node_a, write_square(tmp_path, name, WEST), sld=fill_sld(name, RED))
    return dataset_named(node_a, name)


def test_a_cookie_session_opened_on_one_node_works_on_the_other(cluster):
    with httpx.Client(base_url=cluster.a.url, timeout=60) as on_a:
        login = on_a.post("account/login", json={"username": ADMIN_USER, "password": ADMIN_PASSWORD})
        assert login.status_code == 200, login.text
        cookies = dict(on_a.cookies)
    assert set(cookies) >= {SESSION_COOKIE, CSRF_COOKIE}
    with httpx.Client(base_url=cluster.b.url, cookies=cookies, timeout=60) as on_b:
        me = on_b.get("o/userinfo")
        assert me.status_code == 200 and me.json()["preferred_username"] == ADMIN_USER, me.text
        title = {"title": "Written on node B with node A's session"}
        refused = on_b.post("api/v2/geoapps", json={**title, "resource_type": "geostory"})
        assert refused.status_code == 403 and "CSRF" in refused.text, refused.text
        created = on_b.post("api/v2/geoapps", json={**title, "resource_type": "geostory"},
                            headers={"X-CSRFToken": cookies[CSRF_COOKIE]})
        assert created.status_code == 201, created.text
        logout = on_b.post("account/logout", headers={"X-CSRFToken": cookies[CSRF_COOKIE]})
        assert logout.status_code == 200, logout.text
    with httpx.Client(base_url=cluster.a.url, cookies=cookies, timeout=60) as on_a:
        assert on_a.get("o/userinfo").status_code == 401  # closed on B, closed on A


def test_a_password_changed_on_a_is_refused_by_b_at_once(cluster, node_a):
    created = node_a.post("api/v2/users", json={"username": "rover", "password": "first-pass-word-1"})
    assert created.status_code == 200, created.text
    old, new = basic("rover", "first-pass-word-1"), basic("rover", "second-pass-word-2")
    # B verifies the password once and remembers it.
    assert httpx.get(f"{cluster.b.url}api/v2/users", headers=old, timeout=60).status_code == 200
    changed = node_a.patch(f"api/v2/users/{created.json()['user']['pk']}",
                           json={"password": "second-pass-word-2"})
    assert changed.status_code == 200, changed.text
    assert httpx.get(f"{cluster.b.url}api/v2/users", headers=old, timeout=60).status_code == 401
    assert httpx.get(f"{cluster.b.url}api/v2/users", headers=new, timeout=60).status_code == 200


def basic(username: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()}


def test_a_new_style_on_a_is_drawn_by_b_at_once(cluster, node_a, tmp_path):
    dataset = published(node_a, tmp_path, "restyled")
    assert west_and_east(cluster.b.url, dataset["alternate"]) == (rgba(RED), TRANSPARENT)
    tile_url = f"{cluster.b.url}tiles/{dataset['alternate']}/3/4/2.png"
    red_tile = httpx.get(tile_url, timeout=60)
    assert red_tile.status_code == 200
    cached = {"If-None-Match": red_tile.headers["etag"]}
    assert httpx.get(tile_url, headers=cached, timeout=60).status_code == 304
    response = node_a.post(UPLOAD_URL, data={"action": "resource_style_upload",
                                             "resource_pk": str(dataset["pk"])},
                           files={"sld_file": ("blue.sld", fill_sld("restyled", BLUE).encode(),
                                               "application/xml")})
    assert response.status_code == 200, response.text
    assert wait_execution(node_a, response.json()["execution_id"])["status"] == "finished"
    assert west_and_east(cluster.b.url, dataset["alternate"]) == (rgba(BLUE), TRANSPARENT)
    # A browser's cached tile is not the current one any more: B sends the blue tile.
    blue_tile = httpx.get(tile_url, headers=cached, timeout=60)
    assert blue_tile.status_code == 200 and blue_tile.headers["etag"] != red_tile.headers["etag"]
    assert rgba(BLUE) in pixels(blue_tile.content).reshape(-1, 4).tolist()


def test_an_overwrite_on_a_is_drawn_by_b_at_once(cluster, node_a, tmp_path):
    before = data_tables(cluster)
    dataset = published(node_a, tmp_path / "first", "overwritten")
    first_table = data_tables(cluster) - before
    assert len(first_table) == 1
    assert west_and_east(cluster.b.url, dataset["alternate"]) == (rgba(RED), TRANSPARENT)
    upload(node_a, write_square(tmp_path / "second", "overwritten", EAST),
           overwrite_existing_layer="true", resource_pk=str(dataset["pk"]))
    again = dataset_named(node_a, "overwritten")
    assert again["pk"] == dataset["pk"]
    assert west_and_east(cluster.b.url, dataset["alternate"]) == (TRANSPARENT, rgba(RED))
    features = httpx.get(f"{cluster.b.url}ows", timeout=60, params={
        "SERVICE": "WFS", "VERSION": "2.0.0", "REQUEST": "GetFeature",
        "TYPENAMES": dataset["alternate"], "OUTPUTFORMAT": "application/json"}).json()["features"]
    assert len(features) == 1
    assert min(x for x, _ in features[0]["geometry"]["coordinates"][0]) == EAST[0]
    wait_dropped(cluster, first_table)


def test_a_permission_change_on_a_holds_on_b_at_once(cluster, node_a, tmp_path):
    dataset = published(node_a, tmp_path, "withdrawn")
    assert west_and_east(cluster.b.url, dataset["alternate"])[0] == rgba(RED)  # anonymous
    assert httpx.get(f"{cluster.b.url}api/v2/resources/{dataset['pk']}", timeout=60).status_code == 200
    response = node_a.put(f"api/v2/resources/{dataset['pk']}/permissions", json={"users": [], "groups": []})
    assert response.status_code == 200, response.text
    assert wait_execution(node_a, response.json()["execution_id"])["status"] == "finished"
    assert httpx.get(f"{cluster.b.url}api/v2/resources/{dataset['pk']}", timeout=60).status_code == 401
    assert exception_code(get_map(cluster.b.url, dataset["alternate"])) == "LayerNotDefined"
    # Its owner still sees it there.
    assert west_and_east(cluster.b.url, dataset["alternate"], dict(node_a.headers))[0] == rgba(RED)


def test_a_deletion_on_a_is_gone_on_b_at_once(cluster, node_a, tmp_path):
    before = data_tables(cluster)
    dataset = published(node_a, tmp_path, "deleted")
    table = data_tables(cluster) - before
    assert len(table) == 1
    assert west_and_east(cluster.b.url, dataset["alternate"])[0] == rgba(RED)
    response = node_a.delete(f"api/v2/resources/{dataset['pk']}")
    assert response.status_code == 204, response.text
    assert exception_code(get_map(cluster.b.url, dataset["alternate"])) == "LayerNotDefined"
    tile = httpx.get(f"{cluster.b.url}tiles/{dataset['alternate']}/3/4/2.png", timeout=60)
    assert tile.status_code == 404
    wait_dropped(cluster, table)


def exception_code(response: httpx.Response) -> str:
    assert response.status_code == 200, response.text
    root = etree.fromstring(response.content)
    assert etree.QName(root).localname == "ServiceExceptionReport", response.text
    return root[0].get("code")
