"""geonodectl 0.3.5's map commands against a live server, over datasets published through the
real ingest: create with layers, list, describe, maplayers list/add/remove, patch, blobs,
widgets, delete. Each step is checked in the database too. Contract: shared/compat/geonodectl.md
§6.4 and §6.6."""

from __future__ import annotations

import json
import time

import pytest
from sqlalchemy import select

from cartotheca.db.models import MapLayer, Resource
from tests.clients.test_geonodectl import admin, api, ctl, fresh  # noqa: F401  (fixtures)
from tests.geodata.fixtures import polygons_sld, publish_file, write_points, write_polygons
from tests.support.pixels import pixels

pytestmark = pytest.mark.clients


@pytest.fixture
def datasets(db, settings, admin, tmp_path):  # noqa: F811
    return [
        publish_file(db, settings, admin, write_polygons(tmp_path / "a", "ctl_quadrants"),
                     title="Ctl quadrants", sld=polygons_sld("ctl_quadrants")),
        publish_file(db, settings, admin, write_points(tmp_path / "b", "ctl_stations"),
                     title="Ctl stations"),
        publish_file(db, settings, admin, write_polygons(tmp_path / "c", "ctl_more"), title="Ctl more"),
    ]


def stored_layers(db, map_pk: int) -> list[tuple[int | None, str, int]]:
    rows = fresh(db).scalars(select(MapLayer).where(MapLayer.map_id == map_pk)
                             .order_by(MapLayer.order, MapLayer.id))
    return [(r.dataset_id, r.name, r.order) for r in rows]


def blob_ids(blob: dict) -> list[str]:
    return [layer["id"] for layer in blob["map"]["layers"] if layer.get("group") != "background"]


def test_map_commands(ctl, db, api, datasets, tmp_path):  # noqa: F811
    quadrants, stations, more = datasets

    # create: the template, each dataset, then POST maps with the blob and the layers
    created = ctl("maps", "create", "--title", "Field map", "--maplayers", str(quadrants.id),
                  str(stations.id)).json()
    pk = int(created["pk"])
    assert created["title"] == "Field map" and created["resource_type"] == "map"
    assert stored_layers(db, pk) == [(quadrants.id, quadrants.alternate, 0),
                                     (stations.id, stations.alternate, 1)]
    blob = fresh(db).get(Resource, pk).blob
    assert len([lyr for lyr in blob["map"]["layers"] if lyr.get("group") == "background"]) == 4
    msids = [layer["extra_params"]["msId"] for layer in created["maplayers"]]
    assert blob_ids(blob) == msids
    assert created["thumbnail_url"] and api.get(created["thumbnail_url"]).status_code == 200

    # list and describe
    rows = {row["pk"]: row for row in ctl("maps", "list").table()}
    assert rows[str(pk)]["title"] == "Field map" and rows[str(pk)]["owner.username"] == "admin"
    listed = ctl("maps", "list", "--search", "field", as_json=True).json()
    assert [m["pk"] for m in listed] == [str(pk)]
    described = ctl("maps", "describe", pk).json()
    assert [layer["dataset"]["pk"] for layer in described["maplayers"]] == [quadrants.id, stations.id]
    png = next(link["url"] for link in described["links"] if link["name"] == "PNG")
    picture = pixels(api.get(png).content)
    assert (picture[..., 3] > 0).any()

    # maplayers list (table and JSON)
    table = ctl("maps", "maplayers", "list", pk).table()
    assert [(row["dataset.pk"], row["name"], row["order"]) for row in table] == [
        (str(quadrants.id), quadrants.alternate, "0"), (str(stations.id), stations.alternate, "1")]
    assert len(ctl("maps", "maplayers", "list", pk, as_json=True).json()) == 2

    # add a layer, then remove the first: the layer rows and the blob follow
    ctl("maps", "maplayers", "add", pk, str(more.id))
    assert stored_layers(db, pk) == [(quadrants.id, quadrants.alternate, 0),
                                     (stations.id, stations.alternate, 1), (more.id, more.alternate, 2)]
    ctl("maps", "maplayers", "remove", pk, str(quadrants.id))
    assert stored_layers(db, pk) == [(stations.id, stations.alternate, 0), (more.id, more.alternate, 1)]
    blob = fresh(db).get(Resource, pk).blob
    remaining = ctl("maps", "maplayers", "list", pk, as_json=True).json()
    assert blob_ids(blob) == [layer["extra_params"]["msId"] for layer in remaining]
    linked = {i["pk"] for i in api.get(f"resources/{pk}/linked_resources").json()["linked_to"]}
    assert linked == {stations.id, more.id}

    # patch, blobs and widgets
    patched = json.loads(ctl("maps", "patch", pk, "--set", '{"title": "Renamed field map"}').stdout)
    assert patched["map"]["title"] == "Renamed field map"
    assert fresh(db).get(Resource, pk).title == "Renamed field map"
    assert ctl("maps", "get-blob", pk).json()["map"]["layers"] == blob["map"]["layers"]
    new_blob = {"map": {"layers": [], "zoom": 3}, "version": 2}
    path = tmp_path / "blob.json"
    path.write_text(json.dumps(new_blob))
    ctl("maps", "set-blob", pk, "--json_path", str(path))
    assert fresh(db).get(Resource, pk).blob == new_blob
    ctl("maps", "widgets", "add", pk, "textbox", "--title", "Note", "--text", "Hello")
    widgets = ctl("maps", "widgets", "list", pk, as_json=True).json()
    assert [w["title"] for w in widgets] == ["Note"]
    assert len(stored_layers(db, pk)) == 2  # a blob-only write keeps the layers

    # delete through the asynchronous resource delete
    ctl("maps", "delete", pk)
    deadline = time.monotonic() + 15
    while fresh(db).get(Resource, pk) is not None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert fresh(db).get(Resource, pk) is None
    assert stored_layers(db, pk) == []
    assert api.get(f"maps/{pk}").status_code == 404
    assert ctl("maps", "describe", pk, expect=None).returncode == 1


def test_create_refuses_a_missing_dataset(ctl, db, datasets):  # noqa: F811
    run = ctl("maps", "create", "--title", "Broken", "--maplayers", str(datasets[0].id), "999999",
              expect=None)
    assert run.returncode != 0
    titles = set(fresh(db).scalars(select(Resource.title).where(Resource.resource_type == "map")))
    assert titles == set()
