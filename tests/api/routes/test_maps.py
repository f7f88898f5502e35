"""Maps and map layers over real published datasets: create, re-order, patch, fail half-way,
the datasets' maps/maplayers, the composite image by its pixels, the legacy layers collection."""

from __future__ import annotations

import math

import numpy as np
import pyogrio.raw
import pytest
import shapely
from sqlalchemy import func, select

import cartotheca  # noqa: F401  (PROJ_DATA before rasterio/mapnik)
from cartotheca.catalogue import maps as catalogue_maps
from cartotheca.catalogue import permissions as perms
from cartotheca.catalogue import resource_lifecycle
from cartotheca.catalogue import resources as catalogue
from cartotheca.catalogue.accounts import internal_group_ids
from cartotheca.catalogue.auth import InternalGroups, principal_for
from cartotheca.catalogue.families import build_kinds
from cartotheca.catalogue.map_layers import to_mercator
from cartotheca.catalogue.thumbnails import thumbnail_path
from cartotheca.db.models import Dataset, LinkedResource, Map, MapLayer, Resource
from cartotheca.ows import render
from cartotheca.ows.thumbnails import MapThumbnails, fit_box
from tests.conftest import basic
from tests.factories import PASSWORD, make_user
from tests.geodata.fixtures import polygons_sld, publish_file, write_points, write_polygons
from tests.ows.conftest import make_private
from tests.support.pixels import pixels

RED, GREEN, YELLOW, CYAN = (255, 0, 0), (0, 255, 0), (255, 255, 0), (0, 255, 255)
# The overlay: one cyan square over the middle of the four quadrants (lon 5..15, lat 45..55).
# The kinds as the app builds them: copies and deletions made directly, outside a request.
KINDS = build_kinds(MapThumbnails(), render.forget_data)
OVERLAY_BOUNDS = (5.0, 45.0, 15.0, 55.0)
# Where only one thing lies (away from the stations' markers): lon, lat → colour
ONLY = {(2.0, 58.0): RED, (18.0, 58.0): GREEN, (18.0, 42.0): YELLOW}
# Where the overlay lies over a quadrant: the upper layer's colour shows
OVERLAP = {(7.0, 52.0): RED, (12.0, 48.0): YELLOW}


def solid_sld(layer: str, colour: str) -> str:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<StyledLayerDescriptor version="1.0.0" xmlns="http://www.opengis.net/sld" '
        'xmlns:ogc="http://www.opengis.net/ogc">'
        f"<NamedLayer><Name>{layer}</Name><UserStyle><Name>{layer}_solid</Name><FeatureTypeStyle><Rule>"
        f'<PolygonSymbolizer><Fill><CssParameter name="fill">{colour}</CssParameter></Fill>'
        "</PolygonSymbolizer></Rule></FeatureTypeStyle></UserStyle></NamedLayer></StyledLayerDescriptor>"
    )


def write_square(tmp_path, name: str, bounds) -> str:
    path = tmp_path / f"{name}.gpkg"
    pyogrio.raw.write(str(path), shapely.to_wkb(np.array([shapely.box(*bounds)])),
                      [np.array([name], dtype=object)], ["name"], driver="GPKG", crs="EPSG:4326",
                      geometry_type="Polygon")
    return path


@pytest.fixture
def owner(db):
    return make_user(db, "cartographer")


@pytest.fixture
def owner_auth(owner):
    return basic("cartographer", PASSWORD)


@pytest.fixture
def datasets(db, settings, owner, tmp_path) -> dict[str, Resource]:
    """Three published datasets: the coloured quadrants (lon 0..20, lat 40..60), a cyan overlay
    and ten stations (point i at lon -10 + 2i, lat 40 + i)."""
    return {
        "quadrants": publish_file(db, settings, owner, write_polygons(tmp_path / "q", "quadrants"),
                                  title="Quadrants", sld=polygons_sld("quadrants")),
        "overlay": publish_file(db, settings, owner, write_square(tmp_path, "overlay", OVERLAY_BOUNDS),
                                title="Overlay", sld=solid_sld("overlay", "#00ffff")),
        "stations": publish_file(db, settings, owner, write_points(tmp_path / "p", "stations"),
                                 title="Stations"),
    }


def create(client, headers, title: str, maplayers: list, **fields):
    response = client.post("/api/v2/maps", headers=headers,
                           json={"title": title, "maplayers": maplayers, **fields})
    assert response.status_code == 201, response.text
    return response.json()["map"]


def three_layer_map(client, owner_auth, datasets) -> dict:
    """Quadrants at the bottom, then the overlay, then the stations; each named another way."""
    q, o, s = datasets["quadrants"], datasets["overlay"], datasets["stations"]
    return create(client, owner_auth, "Three layers", [
        {"dataset": q.id, "order": 0, "extra_params": {"msId": "q-1"}},
        {"name": o.alternate, "order": 1, "opacity": 1.0, "current_style": o.alternate},
        {"dataset": {"pk": str(s.id)}, "order": 2, "visibility": True},
    ])


def layers_of(client, map_pk, headers=None) -> list[dict]:
    response = client.get(f"/api/v2/maps/{map_pk}/maplayers", headers=headers or {})
    assert response.status_code == 200, response.text
    assert isinstance(response.json(), list)
    return response.json()


def image(client, map_pk, headers=None, extension="png"):
    response = client.get(f"/maps/{map_pk}/image.{extension}", headers=headers or {})
    assert response.status_code == 200, response.text
    return response


def colour_at(record: dict, picture: np.ndarray, lon: float, lat: float) -> tuple[int, ...]:
    """The RGBA pixel at lon/lat of the map image, whose box is the map's native (Web Mercator) box."""
    ring = record["bbox_polygon"]["coordinates"][0]
    xs, ys = [p[0] for p in ring], [p[1] for p in ring]
    x, y = to_mercator(lon, lat)
    height, width = picture.shape[:2]
    column = int((x - min(xs)) / (max(xs) - min(xs)) * width)
    row = int((max(ys) - y) / (max(ys) - min(ys)) * height)
    return tuple(int(v) for v in picture[row, column])


# -- create ---------------------------------------------------------------------------------


def test_create_map_with_three_layers(client, db, settings, owner_auth, datasets):
    record = three_layer_map(client, owner_auth, datasets)
    q, o, s = datasets["quadrants"], datasets["overlay"], datasets["stations"]
    assert record["resource_type"] == "map" and record["title"] == "Three layers"
    assert record["urlsuffix"] == "" and record["featuredurl"] == "" and record["data"] == {}
    assert record["executions"] == [] and record["metadata"] == []
    assert [layer["dataset"]["pk"] for layer in record["maplayers"]] == [q.id, o.id, s.id]
    assert [layer["name"] for layer in record["maplayers"]] == [q.alternate, o.alternate, s.alternate]
    first, second, third = record["maplayers"]
    assert first["extra_params"] == {"msId": "q-1"} and first["current_style"] is None
    assert second["current_style"] == o.alternate and second["opacity"] == 1.0
    assert set(first) == {"pk", "extra_params", "current_style", "name", "order", "visibility",
                          "opacity", "dataset"}
    embedded = first["dataset"]
    assert set(embedded) == {"pk", "alternate", "title", "perms", "links", "has_time",
                             "default_style", "styles", "ptype", "featureinfo_custom_template"}
    assert embedded["title"] == "Quadrants" and "view_resourcebase" in embedded["perms"]
    assert embedded["default_style"]["name"] == embedded["styles"][0]["name"]
    # the extent is the union of the datasets' boxes; stored natively in Web Mercator
    assert record["srid"] == "EPSG:3857"
    assert record["extent"]["coords"] == pytest.approx([-10.0, 40.0, 20.0, 60.0], abs=1e-6)
    ring = record["bbox_polygon"]["coordinates"][0]
    assert min(p[0] for p in ring) == pytest.approx(to_mercator(-10, 40)[0])
    assert max(p[1] for p in ring) == pytest.approx(to_mercator(20, 60)[1])
    # the map links to its datasets, and they see the map linking to them
    linked = {i["pk"] for i in record["linked_resources"]["linked_to"]}
    assert linked == {q.id, o.id, s.id}
    back = client.get(f"/api/v2/resources/{o.id}/linked_resources").json()["linked_by"]
    assert [(i["pk"], i["internal"]) for i in back] == [(int(record["pk"]), True)]
    # image links served by the map routes, and a drawn thumbnail
    images = {link["name"]: link for link in record["links"] if link["link_type"] == "image"}
    assert images["PNG"]["url"] == f"http://testserver/maps/{record['pk']}/image.png"
    assert images["JPEG"]["mime"] == "image/jpeg" and images["PDF"]["url"].endswith("image.pdf")
    assert record["thumbnail_url"] == f"http://testserver/thumbnails/{record['uuid']}.png"
    thumbnail = pixels(client.get(record["thumbnail_url"]).content)
    assert thumbnail.shape[:2] == tuple(reversed(settings.THUMBNAIL_SIZE[:2]))
    assert (thumbnail[..., 3] > 0).any()
    # the detail and the list: the list leaves the layers and data out
    detail = client.get(f"/api/v2/maps/{record['pk']}", headers=owner_auth).json()["map"]
    assert detail["maplayers"] == record["maplayers"]
    listed = client.get("/api/v2/maps").json()
    assert listed["total"] == 1 and "maplayers" not in listed["maps"][0]
    assert listed["maps"][0]["link"] == f"http://testserver/api/v2/maps/{record['pk']}"


def test_the_datasets_list_the_map_that_uses_them(client, db, settings, owner, owner_auth, datasets):
    record = three_layer_map(client, owner_auth, datasets)
    private = create(client, owner_auth, "Private map", [{"dataset": datasets["overlay"].id}])
    make_private(db, settings, db.get(Resource, int(private["pk"])))
    o = datasets["overlay"]
    maps = client.get(f"/api/v2/datasets/{o.id}/maps").json()
    assert maps == [{"pk": int(record["pk"]), "title": "Three layers",
                     "detail_url": f"http://testserver/catalogue/#/map/{record['pk']}",
                     "link": f"http://testserver/api/v2/maps/{record['pk']}"}]
    mine = client.get(f"/api/v2/datasets/{o.id}/maps", headers=owner_auth).json()
    assert {m["title"] for m in mine} == {"Three layers", "Private map"}
    maplayers = client.get(f"/api/v2/datasets/{o.id}/maplayers").json()
    overlay_layer = record["maplayers"][1]
    assert maplayers == [{k: v for k, v in overlay_layer.items() if k != "dataset"}]
    assert len(client.get(f"/api/v2/datasets/{o.id}/maplayers", headers=owner_auth).json()) == 2
    assert client.get(f"/api/v2/datasets/{o.id}/maps?search=three").json()[0]["title"] == "Three layers"


# -- patch ----------------------------------------------------------------------------------


def test_reorder_and_patch_the_layers(client, db, owner_auth, datasets):
    record = three_layer_map(client, owner_auth, datasets)
    pk = record["pk"]
    quadrants, overlay, stations = record["maplayers"]
    # overlay to the bottom, quadrants half transparent, stations removed, written back as
    # geonodectl does (pk, name, order ...), the embedded dataset dropped or echoed as read
    body = {"maplayers": [
        {**overlay, "order": 0},
        {"pk": quadrants["pk"], "name": quadrants["name"], "order": 1, "opacity": 0.5,
         "current_style": quadrants["name"], "extra_params": {"msId": "q-2"}},
    ], "title": "Re-ordered"}
    response = client.patch(f"/api/v2/maps/{pk}/", headers=owner_auth, json=body)
    assert response.status_code == 200, response.text
    assert response.json()["map"]["title"] == "Re-ordered"
    after = layers_of(client, pk)
    assert [(layer["pk"], layer["order"]) for layer in after] == [(overlay["pk"], 0), (quadrants["pk"], 1)]
    assert after[1]["opacity"] == 0.5 and after[1]["extra_params"] == {"msId": "q-2"}
    assert db.scalar(select(func.count()).select_from(MapLayer).where(MapLayer.id == stations["pk"])) == 0
    # the extent and the internal links follow the layers
    detail = client.get(f"/api/v2/maps/{pk}", headers=owner_auth).json()["map"]
    assert detail["extent"]["coords"] == pytest.approx([0.0, 40.0, 20.0, 60.0], abs=1e-6)
    links = set(db.scalars(select(LinkedResource.target_id).where(LinkedResource.source_id == int(pk))))
    assert links == {datasets["quadrants"].id, datasets["overlay"].id}
    # PUT of the record as read changes nothing; a new dataset by alternate adds a layer on top
    echoed = client.put(f"/api/v2/maps/{pk}", headers=owner_auth, json=detail)
    assert echoed.status_code == 200, echoed.text
    assert layers_of(client, pk) == after
    added = client.patch(f"/api/v2/maps/{pk}", headers=owner_auth, json={"maplayers": [
        {"pk": overlay["pk"]}, {"pk": quadrants["pk"]},
        {"name": datasets["stations"].alternate.split(":")[1], "order": 5, "visibility": False}]})
    assert added.status_code == 200, added.text
    newest = layers_of(client, pk)[-1]
    assert newest["name"] == datasets["stations"].alternate and newest["visibility"] is False


BAD_ITEMS = [
    ({"dataset": 999999}, "maplayers[2]: no dataset 999999 that you may view"),
    ({"name": "geonode:missing"}, "maplayers[2]: no dataset 'geonode:missing' that you may view"),
    ({"dataset": "private"}, "that you may view"),
    ({"name": "x", "opacity": 2}, "maplayers[2].opacity: expected a number from 0 to 1"),
    ({"name": "x", "visibility": "yes"}, "maplayers[2].visibility: expected true or false"),
    ({"name": "x", "colour": "red"}, "maplayers[2]: unknown field colour"),
    ({"pk": 999999}, "maplayers[2]: no layer with pk 999999 in this map"),
    ({"dataset": "overlay", "current_style": "nope"}, "has no style 'nope'"),
]


def test_a_patch_failing_half_way_changes_nothing(client, db, settings, owner_auth, datasets, tmp_path):
    record = three_layer_map(client, owner_auth, datasets)
    pk = record["pk"]
    before = layers_of(client, pk)
    stranger = make_user(db, "stranger")
    hidden = publish_file(db, settings, stranger, write_square(tmp_path, "private_dataset", (0, 0, 1, 1)),
                          title="Hidden")
    make_private(db, settings, hidden)
    names = {"private": hidden.alternate.split(":")[1], "overlay": datasets["overlay"].alternate}
    for bad, message in BAD_ITEMS:
        bad = {k: names.get(v, v) if isinstance(v, str) else v for k, v in bad.items()}
        # the first two items are fine changes (re-ordering, opacity); the third is not
        body = {"title": "Should not stick", "maplayers": [
            {"pk": before[2]["pk"], "order": 0}, {"pk": before[0]["pk"], "order": 1, "opacity": 0.1}, bad]}
        response = client.patch(f"/api/v2/maps/{pk}", headers=owner_auth, json=body)
        assert response.status_code == 400, (bad, response.text)
        assert any(message in error for error in response.json()["errors"]), (bad, response.json())
        assert client.get(f"/api/v2/maps/{pk}").json()["map"]["title"] == "Three layers"
        assert layers_of(client, pk) == before
        assert db.scalar(select(func.count()).select_from(MapLayer)) == 3


def test_invalid_creates_leave_nothing(client, db, owner_auth, datasets):
    for maplayers in ([{"dataset": datasets["quadrants"].id}, {"dataset": 424242}],
                      "not a list", [{"pk": 1, "name": datasets["quadrants"].alternate}],
                      [{"dataset": datasets["quadrants"].id, "order": "first"}], [{}]):
        response = client.post("/api/v2/maps", headers=owner_auth,
                               json={"title": "Broken", "maplayers": maplayers})
        assert response.status_code == 400, (maplayers, response.text)
    assert db.scalar(select(func.count()).select_from(Resource).where(Resource.resource_type == "map")) == 0
    assert db.scalar(select(func.count()).select_from(MapLayer)) == 0
    assert client.post("/api/v2/maps", json={"title": "Anonymous"}).status_code == 401


# -- pictures -------------------------------------------------------------------------------


def test_png_download_shows_the_layers_by_pixels(client, owner_auth, datasets):
    record = three_layer_map(client, owner_auth, datasets)
    pk = record["pk"]
    picture = pixels(image(client, pk).content)
    assert max(picture.shape[:2]) == 550  # the map's box, its longer side 550 pixels
    for (lon, lat), colour in ONLY.items():
        assert colour_at(record, picture, lon, lat)[:3] == colour, (lon, lat)
    for lon, lat in OVERLAP:
        assert colour_at(record, picture, lon, lat)[:3] == CYAN, (lon, lat)  # the overlay is above
    assert colour_at(record, picture, -8.0, 58.0)[3] == 0  # nothing there: transparent
    station = colour_at(record, picture, -6.0, 42.0)  # station 3 (default point marker)
    assert station[3] == 255 and station[:3] not in (RED, GREEN, YELLOW, CYAN)

    # overlay moved below the quadrants: each quadrant's colour shows where they overlap
    q, o, s = record["maplayers"]
    reorder = [{"pk": q["pk"], "order": 2}, {"pk": o["pk"], "order": 1}, {"pk": s["pk"], "order": 3}]
    assert client.patch(f"/api/v2/maps/{pk}", headers=owner_auth,
                        json={"maplayers": reorder}).status_code == 200
    picture = pixels(image(client, pk).content)
    for (lon, lat), colour in OVERLAP.items():
        assert colour_at(record, picture, lon, lat)[:3] == colour, (lon, lat)

    # overlay on top again at half opacity: cyan over red blends; hidden: red
    half = [{"pk": q["pk"], "order": 0}, {"pk": o["pk"], "order": 1, "opacity": 0.5},
            {"pk": s["pk"], "order": 2}]
    client.patch(f"/api/v2/maps/{pk}", headers=owner_auth, json={"maplayers": half})
    red, green, blue, alpha = colour_at(record, pixels(image(client, pk).content), 7.0, 52.0)
    assert abs(red - 128) <= 3 and abs(green - 128) <= 3 and abs(blue - 128) <= 3 and alpha == 255
    hidden = [{"pk": q["pk"]}, {"pk": o["pk"], "visibility": False}, {"pk": s["pk"]}]
    client.patch(f"/api/v2/maps/{pk}", headers=owner_auth, json={"maplayers": hidden})
    assert colour_at(record, pixels(image(client, pk).content), 7.0, 52.0)[:3] == RED


def test_jpeg_and_pdf_downloads(client, owner_auth, datasets):
    pk = three_layer_map(client, owner_auth, datasets)["pk"]
    jpeg = image(client, pk, extension="jpg")
    assert jpeg.headers["content-type"] == "image/jpeg" and jpeg.content[:3] == b"\xff\xd8\xff"
    record = client.get(f"/api/v2/maps/{pk}").json()["map"]
    red, green, blue, _ = colour_at(record, pixels(jpeg.content), 2.0, 58.0)
    assert red > 230 and green < 30 and blue < 30
    pdf = image(client, pk, extension="pdf")
    assert pdf.headers["content-type"] == "application/pdf" and pdf.content.startswith(b"%PDF")
    assert client.get(f"/maps/{pk}/image.gif").status_code == 400
    assert client.get("/maps/999999/image.png").status_code == 404
    page = client.get(record["embed_url"])
    assert page.status_code == 200 and f"/maps/{pk}/image.png" in page.text


def test_layers_of_private_datasets_are_hidden_and_kept(client, db, settings, owner, owner_auth,
                                                        datasets):
    record = three_layer_map(client, owner_auth, datasets)
    pk = record["pk"]
    make_private(db, settings, datasets["overlay"])
    overlay = datasets["overlay"]
    public = client.get(f"/api/v2/maps/{pk}")
    assert [layer["name"] for layer in public.json()["map"]["maplayers"]] == [
        datasets["quadrants"].alternate, datasets["stations"].alternate]
    for path in (f"/api/v2/maps/{pk}", f"/api/v2/maps/{pk}/maplayers", f"/api/v2/maps/{pk}/layers",
                 f"/api/v2/maps/{pk}/datasets", f"/api/v2/maps/{pk}/local_layers", "/api/v2/layers"):
        text = client.get(path).text
        assert overlay.alternate not in text and "Overlay" not in text, path
    # the anonymous picture leaves the overlay out; the owner's shows it
    assert colour_at(record, pixels(image(client, pk).content), 7.0, 52.0)[:3] == RED
    assert colour_at(record, pixels(image(client, pk, owner_auth).content), 7.0, 52.0)[:3] == CYAN
    # a co-editor who cannot see the overlay rewrites the list: the overlay layer stays
    editor = make_user(db, "editor")
    perms.grant(db, int(pk), "edit", user_id=editor.id)
    db.commit()
    response = client.patch(f"/api/v2/maps/{pk}", headers=basic("editor", PASSWORD),
                            json={"maplayers": [{"pk": record["maplayers"][0]["pk"]}]})
    assert response.status_code == 200, response.text
    assert [layer["name"] for layer in layers_of(client, pk, owner_auth)] == [
        datasets["quadrants"].alternate, overlay.alternate]
    # nor can they add it by name
    denied = client.patch(f"/api/v2/maps/{pk}", headers=basic("editor", PASSWORD),
                          json={"maplayers": [{"name": overlay.alternate}]})
    assert denied.status_code == 400


def test_deleting_a_dataset_keeps_its_layer_without_dataset(client, db, owner_auth, datasets):
    record = three_layer_map(client, owner_auth, datasets)
    pk = record["pk"]
    overlay = datasets["overlay"]
    assert client.delete(f"/api/v2/resources/{overlay.id}", headers=owner_auth).status_code == 204
    layers = layers_of(client, pk)
    assert [layer["name"] for layer in layers] == [r.alternate for r in datasets.values()]
    assert layers[1]["dataset"] is None
    local = client.get(f"/api/v2/maps/{pk}/local_layers").json()
    assert [layer["pk"] for layer in local] == [layers[0]["pk"], layers[2]["pk"]]
    shown = client.get(f"/api/v2/maps/{pk}/datasets").json()
    assert [d["pk"] for d in shown] == [str(datasets["quadrants"].id), str(datasets["stations"].id)]
    legacy = client.get(f"/api/v2/maps/{pk}/layers").json()
    assert legacy[1]["local"] is False and legacy[1]["dataset"] is None
    picture = pixels(image(client, pk).content)
    assert colour_at(record, picture, 7.0, 52.0)[:3] == RED
    # the layer of the deleted dataset can be written back as it is, or dropped
    echo = client.put(f"/api/v2/maps/{pk}", headers=owner_auth, json={"maplayers": [
        {"pk": layers[0]["pk"]}, {"pk": layers[1]["pk"], "name": layers[1]["name"]}]})
    assert echo.status_code == 200, echo.text
    assert len(layers_of(client, pk)) == 2


def test_map_sub_paths(client, owner_auth, datasets):
    record = three_layer_map(client, owner_auth, datasets)
    pk = record["pk"]
    legacy = client.get(f"/api/v2/maps/{pk}/layers").json()
    assert [(layer["name"], layer["opacity"], layer["visibility"]) for layer in legacy] == [
        (r.alternate, 1.0, True) for r in datasets.values()]
    assert legacy[0]["layer_params"] == {"msId": "q-1"} and legacy[0]["local"] is True
    shown = client.get(f"/api/v2/maps/{pk}/datasets/").json()
    assert [d["title"] for d in shown] == ["Quadrants", "Overlay", "Stations"]
    assert shown[0]["alternate"] == datasets["quadrants"].alternate and "default_style" in shown[0]
    assert client.get(f"/api/v2/maps/{pk}/maplayers?search=overlay").json()[0]["name"] == \
        datasets["overlay"].alternate
    assert len(client.get(f"/api/v2/maps/{pk}/maplayers?page=2&page_size=2").json()) == 1
    related = client.get(f"/api/v2/maps/{pk}/maplayers/", headers=owner_auth).json()
    assert related == record["maplayers"]
    assert client.get(f"/api/v2/maps/{pk}/owner").json()["owner"]["username"] == "cartographer"
    assert client.get("/api/v2/maps/999999/maplayers").status_code == 404
    assert client.get(f"/api/v2/maps/{datasets['quadrants'].id}/maplayers").status_code == 404


def test_copied_map_keeps_its_layers(client, db, settings, owner, owner_auth, datasets):
    record = three_layer_map(client, owner_auth, datasets)
    groups = internal_group_ids(db, settings)
    principal = principal_for(db, owner, InternalGroups(*groups), "test")
    source = catalogue.load_many(db, [int(record["pk"])])[0]
    clone = resource_lifecycle.copy_resource(db, principal, settings, source, {"title": "Copy"}, kinds=KINDS)
    db.commit()
    copied = layers_of(client, clone.id)
    assert [(layer["name"], layer["order"]) for layer in copied] == [
        (layer["name"], layer["order"]) for layer in record["maplayers"]]
    assert {layer["pk"] for layer in copied}.isdisjoint({layer["pk"] for layer in record["maplayers"]})
    assert db.get(Map, clone.id) is not None
    # someone else's copy leaves out the layers of datasets they may not view
    make_private(db, settings, datasets["overlay"])
    other = make_user(db, "copier")
    copier = principal_for(db, other, InternalGroups(*groups), "test")
    theirs = resource_lifecycle.copy_resource(db, copier, settings, source, {"title": "Their copy"},
                                              kinds=KINDS)
    db.commit()
    assert [layer["name"] for layer in layers_of(client, theirs.id, basic("copier", PASSWORD))] == [
        datasets["quadrants"].alternate, datasets["stations"].alternate]
    assert db.scalar(select(func.count()).select_from(MapLayer).where(MapLayer.map_id == theirs.id)) == 2


def test_thumbnail_shows_what_the_owner_may_view(client, db, settings, owner_auth, datasets, tmp_path):
    lender = make_user(db, "lender")
    lent = publish_file(db, settings, lender, write_square(tmp_path, "lent", OVERLAY_BOUNDS),
                        title="Lent", sld=solid_sld("lent", "#00ffff"))
    record = create(client, owner_auth, "Borrowed", [{"dataset": datasets["quadrants"].id},
                                                     {"dataset": lent.id}])
    width, height = settings.THUMBNAIL_SIZE[:2]

    def thumbnail_colour(lon, lat):
        picture = pixels(client.get(f"/thumbnails/{record['uuid']}.png").content)
        ring = record["bbox_polygon"]["coordinates"][0]
        box = fit_box((min(p[0] for p in ring), min(p[1] for p in ring), max(p[0] for p in ring),
                       max(p[1] for p in ring)), width, height)
        x, y = to_mercator(lon, lat)
        column = int((x - box[0]) / (box[2] - box[0]) * width)
        row = int((box[3] - y) / (box[3] - box[1]) * height)
        return tuple(int(v) for v in picture[row, column][:3])

    assert thumbnail_colour(7.0, 52.0) == CYAN
    make_private(db, settings, lent)
    first = record["maplayers"][0]
    response = client.patch(f"/api/v2/maps/{record['pk']}", headers=owner_auth,
                            json={"maplayers": [{"pk": first["pk"], "opacity": 1.0}]})
    assert response.status_code == 200, response.text
    assert thumbnail_colour(7.0, 52.0) == RED  # the lent square is no longer the owner's to show
    assert thumbnail_colour(18.0, 58.0) == GREEN
    owner_view = layers_of(client, record["pk"], owner_auth)
    assert [layer["name"] for layer in owner_view] == [datasets["quadrants"].alternate]
    assert db.scalar(select(func.count()).select_from(MapLayer)) == 2  # the hidden layer is kept


# -- the legacy layers collection ----------------------------------------------------------


def test_layers_collection_crud(client, db, owner_auth, datasets):
    record = create(client, owner_auth, "Layer by layer", [{"dataset": datasets["quadrants"].id}])
    pk = int(record["pk"])
    added = client.post("/api/v2/layers", headers=owner_auth,
                        json={"map": pk, "dataset": datasets["overlay"].id, "opacity": 0.25})
    assert added.status_code == 201, added.text
    layer = added.json()["layer"]
    assert layer["map"] == pk and layer["order"] == 1 and layer["opacity"] == 0.25
    assert layer["dataset"]["pk"] == datasets["overlay"].id
    assert layer["link"] == f"http://testserver/api/v2/layers/{layer['pk']}"
    listed = client.get("/api/v2/layers").json()
    assert listed["total"] == 2 and [i["pk"] for i in listed["layers"]][-1] == layer["pk"]
    filtered = client.get(f"/api/v2/layers?filter{{dataset}}={datasets['overlay'].id}").json()
    assert [i["pk"] for i in filtered["layers"]] == [layer["pk"]]
    assert client.get("/api/v2/layers?filter{nope}=1").status_code == 400
    assert client.get(f"/api/v2/layers/{layer['pk']}", headers=owner_auth).json()["layer"] == layer
    assert client.get(f"/api/v2/layers/{layer['pk']}/map").json() == {"map": pk}
    # patch: the layer goes to the bottom of the stack
    patched = client.patch(f"/api/v2/layers/{layer['pk']}", headers=owner_auth,
                           json={"opacity": 0.75, "order": -1})
    assert patched.status_code == 200, patched.text
    assert patched.json()["layer"]["opacity"] == 0.75
    assert layers_of(client, pk)[0]["pk"] == layer["pk"]
    moved = client.patch(f"/api/v2/layers/{layer['pk']}", headers=owner_auth, json={"map": pk + 1000})
    assert moved.status_code == 400
    # others may read but not write; anonymous writes ask for credentials
    make_user(db, "reader")
    reader = basic("reader", PASSWORD)
    assert client.get(f"/api/v2/layers/{layer['pk']}", headers=reader).status_code == 200
    denied = client.patch(f"/api/v2/layers/{layer['pk']}", headers=reader, json={"opacity": 1})
    assert denied.status_code == 403
    assert client.delete(f"/api/v2/layers/{layer['pk']}", headers=reader).status_code == 403
    assert client.post("/api/v2/layers", headers=reader,
                       json={"map": pk, "dataset": datasets["stations"].id}).status_code == 403
    assert client.post("/api/v2/layers", json={"map": pk, "name": "x"}).status_code == 401
    # delete
    assert client.delete(f"/api/v2/layers/{layer['pk']}", headers=owner_auth).status_code == 204
    assert client.get(f"/api/v2/layers/{layer['pk']}").status_code == 404
    assert [i["dataset"]["pk"] for i in layers_of(client, pk)] == [datasets["quadrants"].id]
    assert set(db.scalars(select(LinkedResource.target_id).where(LinkedResource.source_id == pk))) == {
        datasets["quadrants"].id}


# -- statements -----------------------------------------------------------------------------


def _bulk_maps(db, settings, owner, dataset: Resource, count: int) -> None:
    """``count`` public maps of one layer each, written straight to the tables (fast)."""
    anonymous_id, _ = internal_group_ids(db, settings)
    resources = [Resource(resource_type="map", title=f"Bulk map {i:03d}", owner_id=owner.id,
                          srid="EPSG:3857", blob={}) for i in range(count)]
    db.add_all(resources)
    db.flush()
    for resource in resources:
        db.add(Map(resource_id=resource.id, urlsuffix="", featuredurl=""))
        db.add(MapLayer(map_id=resource.id, dataset_id=dataset.id, name=dataset.alternate, order=0,
                        visibility=True, opacity=1.0))
        perms.grant(db, resource.id, "view", group_id=anonymous_id)
    db.commit()


def test_statements_do_not_grow_with_rows(client, db, settings, owner, owner_auth, datasets,
                                          count_statements):
    _bulk_maps(db, settings, owner, datasets["quadrants"], 200)
    counts = []
    for size in (20, 200):
        with count_statements() as n:
            response = client.get(f"/api/v2/maps?page_size={size}", headers=owner_auth)
        assert response.status_code == 200 and len(response.json()["maps"]) == size
        counts.append(n.value)
    assert counts[0] == counts[1], counts
    small = create(client, owner_auth, "Few", [{"dataset": d.id} for d in datasets.values()])
    big = create(client, owner_auth, "Many", [{"dataset": d.id} for d in datasets.values()] * 10)
    for path in ("", "/maplayers", "/datasets"):
        counts = []
        for record in (small, big):
            with count_statements() as n:
                assert client.get(f"/api/v2/maps/{record['pk']}{path}").status_code == 200
            counts.append(n.value)
        assert counts[0] == counts[1], (path, counts)
    counts = []
    for size in (2, 30):
        with count_statements() as n:
            assert len(client.get(f"/api/v2/layers?page_size={size}").json()["layers"]) == size
        counts.append(n.value)
    assert counts[0] == counts[1], counts


def test_map_template_for_geonodectl(client):
    body = client.get("/static/mapstore/configs/map.json").json()
    assert body["map"]["layers"] == [] and body["map"]["projection"] == "EPSG:3857"


def test_extent_without_layers_is_the_mercator_world(client, owner_auth):
    record = create(client, owner_auth, "Empty", [])
    assert record["maplayers"] == [] and record["thumbnail_url"] is None
    assert record["extent"]["coords"] == pytest.approx([-180.0, -85.0511287798066, 180.0, 85.0511287798066])
    ring = record["bbox_polygon"]["coordinates"][0]
    assert max(p[0] for p in ring) == pytest.approx(20037508.342789244)
    assert max(p[1] for p in ring) == pytest.approx(20037508.342789244)
    assert math.isclose(client.get(f"/api/v2/maps/{record['pk']}").json()["map"]["extent"]["coords"][0],
                        -180.0)
    empty = pixels(image(client, record["pk"]).content)
    assert empty.shape[:2] == (550, 550) and not (empty[..., 3] > 0).any()


def test_domain_thumbnail_failure_does_not_fail_the_save(client, db, settings, owner_auth, datasets):
    """A map whose dataset's stored data is gone still saves; the thumbnail is skipped."""
    dataset = db.scalar(select(Dataset).where(Dataset.resource_id == datasets["overlay"].id))
    dataset.location = "missing/nowhere.gpkg" if dataset.storage == "geopackage" else "public.nowhere"
    db.commit()
    record = create(client, owner_auth, "Broken data", [{"dataset": datasets["overlay"].id}])
    assert record["thumbnail_url"] is None
    assert not thumbnail_path(settings, record["uuid"]).exists()
    assert catalogue_maps.map_rows(db, [int(record["pk"])])
