"""The dataset collection: GeoNode's dataset extras, links that resolve, attribute and template
edits, the metadata upload, related objects and statement counts."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

import morecantile
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

import cartotheca  # noqa: F401  (PROJ_DATA before rasterio/mapnik)
from cartotheca.db.models import Dataset, DatasetAttribute, Resource, Style
from tests.catalogue import iso_documents as docs
from tests.catalogue.iso_documents import gmd, mdb
from tests.conftest import basic
from tests.factories import PASSWORD, make_resource, make_user
from tests.geodata.fixtures import (
    POINT_COUNT,
    POLYGONS_BOUNDS,
    polygons_sld,
    publish_file,
    write_points,
    write_polygons,
    write_raster,
)
from tests.ows.conftest import make_private
from tests.support.pixels import pixels

# GeoNode's recorded answers, in the shared notes beside the project (../shared/compat/)
SAMPLES = Path(__file__).resolve().parents[3].parent / "shared" / "compat" / "geonode-samples"
LIST_ONLY_ABSENT = ("attribute_set", "ows_url", "capabilities_url", "dataset_ows_url")
# Statements of a datasets page, measured on both backends: what a resources page costs, plus
# one for the page's dataset rows and one for their styles.
LIST_BUDGET = 11


def sample(name: str) -> dict:
    return json.loads((SAMPLES / name).read_text())["response"]["body"]


@pytest.fixture
def owner(db):
    return make_user(db, "owner", email="owner@example.org")


@pytest.fixture
def owner_auth(owner):
    return basic("owner", PASSWORD)


@pytest.fixture
def polygons(db, settings, owner, tmp_path):
    return publish_file(db, settings, owner, write_polygons(tmp_path), title="Polygons",
                        sld=polygons_sld())


@pytest.fixture
def points(db, settings, owner, tmp_path):
    return publish_file(db, settings, owner, write_points(tmp_path), title="Observations", time=True)


@pytest.fixture
def raster(db, settings, owner, tmp_path):
    return publish_file(db, settings, owner, write_raster(tmp_path), title="Raster")


# -- records --------------------------------------------------------------------------------


def test_list_records_have_geonode_dataset_fields(client, polygons):
    body = client.get("/api/v2/datasets", params={"page_size": 3}).json()
    assert set(body) == {"links", "total", "page", "page_size", "datasets"}
    record = body["datasets"][0]
    expected = sample("032_GET_datasets.json")["datasets"][0]
    missing = set(expected) - set(record)
    assert not missing, missing
    for key in LIST_ONLY_ABSENT:
        assert key not in record
    for key, value in expected.items():
        if key in record and value is not None and record[key] is not None:
            assert type(record[key]) is type(value), key
    assert record["pk"] == str(polygons.id)
    assert record["name"] == polygons.name and record["workspace"] == "geonode"
    assert record["alternate"] == f"geonode:{polygons.name}"
    assert record["store"] and record["charset"] == "UTF-8" and record["ptype"] == "gxp_wmscsource"
    assert record["subtype"] == "vector" and record["has_time"] is False
    assert record["link"] == f"http://testserver/api/v2/datasets/{polygons.id}"


def test_detail_has_attributes_styles_and_ows_urls(client, polygons):
    response = client.get(f"/api/v2/datasets/{polygons.id}")
    assert response.status_code == 200
    record = response.json()["dataset"]
    expected = sample("033_GET_dataset-detail.json")["dataset"]
    assert not (set(expected) - set(record))
    names = [a["attribute"] for a in record["attribute_set"]]
    assert names[1:] == ["name", "color", "rank", "area"]
    assert record["attribute_set"][0]["attribute_type"].startswith("gml:")
    rank = next(a for a in record["attribute_set"] if a["attribute"] == "rank")
    assert set(rank) == {"pk", "attribute", "description", "attribute_label", "attribute_type",
                         "visible", "display_order", "featureinfo_type", "count", "min", "max",
                         "average", "median", "stddev", "sum", "unique_values",
                         "last_stats_updated"}
    assert isinstance(rank["pk"], int) and rank["count"] == 5 and float(rank["min"]) == 1.0
    assert record["ows_url"] == "http://testserver/ows"
    assert record["dataset_ows_url"] == "http://testserver/ows"
    assert "request=GetCapabilities" in record["capabilities_url"]
    style = record["default_style"]
    assert set(style) == {"pk", "name", "workspace", "sld_title", "sld_url"}
    assert record["styles"] == [style]
    sld = client.get(style["sld_url"])
    assert sld.status_code == 200 and b"north-west" in sld.content


def test_geometry_fields_come_from_the_data(client, polygons):
    record = client.get(f"/api/v2/datasets/{polygons.id}").json()["dataset"]
    minx, miny, maxx, maxy = POLYGONS_BOUNDS
    ring = record["ll_bbox_polygon"]["coordinates"][0]
    assert ring[0] == pytest.approx([minx, miny]) and ring[2] == pytest.approx([maxx, maxy])
    assert record["bbox_polygon"]["coordinates"][0][2] == pytest.approx([maxx, maxy])
    assert record["extent"] == {"coords": pytest.approx([minx, miny, maxx, maxy]), "srid": "EPSG:4326"}
    assert record["srid"] == "EPSG:4326"
    alternate = record["alternate"]
    assert record["download_url"] == f"http://testserver/datasets/{alternate}/dataset_download"
    assert record["download_urls"] == [{"url": record["download_url"], "ajax_safe": True, "default": True}]
    assert record["embed_url"] == f"http://testserver/datasets/{alternate}/embed"


def test_projected_dataset_links_ask_in_its_own_crs(client, db, settings, owner, tmp_path):
    resource = publish_file(db, settings, owner, write_polygons(tmp_path, crs="EPSG:3857"), title="Merc")
    record = client.get(f"/api/v2/datasets/{resource.id}").json()["dataset"]
    assert record["srid"] == "EPSG:3857"
    png = next(link for link in record["links"] if link["name"] == "PNG")
    assert "srs=EPSG%3A3857" in png["url"]
    assert abs(record["bbox_polygon"]["coordinates"][0][2][0]) > 1000  # metres, not degrees
    response = client.get(png["url"])
    assert response.status_code == 200 and response.headers["content-type"] == "image/png"


def test_resources_list_carries_the_dataset_links_too(client, polygons):
    records = client.get("/api/v2/resources").json()["resources"]
    record = next(r for r in records if r["pk"] == str(polygons.id))
    assert record["download_url"].endswith("/dataset_download")
    types = {link["link_type"] for link in record["links"]}
    assert {"OGC:WMS", "OGC:WFS", "image", "data", "metadata"} <= types
    assert "attribute_set" not in record and "workspace" not in record


# -- links ----------------------------------------------------------------------------------

VECTOR_LINKS = {"Original Dataset", "Zipped Shapefile", "GML 2.0", "GML 3.1.1", "CSV", "Excel", "GeoJSON",
                "KML", "View in Google Earth", "JPEG", "PDF", "PNG", "Tiles", "Vector Tiles", "Legend",
                "Atom", "DIF", "Dublin Core", "ebRIM", "FGDC", "ISO", "ISO with XSL"}
RASTER_LINKS = {"Original Dataset", "GeoTIFF", "JPEG", "PDF", "PNG", "Tiles", "Legend", "Atom", "DIF",
                "Dublin Core", "ebRIM", "FGDC", "ISO", "ISO with XSL"}
# What each link's answer must be (GeoNode puts WFS outputFormat names in ``mime``).
CONTENT_TYPES = {
    "Zipped Shapefile": ("application/zip",),
    "GML 2.0": ("text/xml", "application/gml+xml", "application/xml"),
    "GML 3.1.1": ("text/xml", "application/gml+xml", "application/xml"),
    "CSV": ("text/csv",),
    "Excel": ("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",),
    "GeoJSON": ("application/json", "application/geo+json"),
    "Vector Tiles": ("application/vnd.mapbox-vector-tile", "application/x-protobuf"),
    "Original Dataset": ("application/zip", "image/tiff"),
}
OWS_SERVICES = {"OGC:WMS": "WMS", "OGC:WFS": "WFS", "OGC:WCS": "WCS", "OGC:WMTS": "WMTS"}


def _tile_over(record: dict, zoom: int = 4) -> tuple[int, int, int]:
    """The WebMercatorQuad tile holding the middle of the dataset's extent."""
    minx, miny, maxx, maxy = record["extent"]["coords"]
    tile = morecantile.tms.get("WebMercatorQuad").tile((minx + maxx) / 2, (miny + maxy) / 2, zoom)
    return tile.z, tile.x, tile.y


def _follow(client, link: dict, record: dict, headers=None):
    url = link["url"]
    if link["link_type"] in OWS_SERVICES:
        # An endpoint link names the service root; its capabilities prove the handler is there.
        url += f"?service={OWS_SERVICES[link['link_type']]}&request=GetCapabilities"
    z, x, y = _tile_over(record)
    url = url.replace("{z}", str(z)).replace("{x}", str(x)).replace("{y}", str(y))
    return client.get(url, headers=headers or {})


def _check_links(client, record: dict, names: set[str], headers=None) -> None:
    links = record["links"]
    for link in links:
        assert set(link) == {"extension", "link_type", "name", "mime", "url"}
        assert link["url"].startswith("http://testserver/")
    assert names <= {link["name"] for link in links}
    failures = []
    for link in links:
        response = _follow(client, link, record, headers)
        content_type = response.headers.get("content-type", "").split(";")[0].strip()
        if link["link_type"] in OWS_SERVICES or link["link_type"] == "metadata":
            wanted: tuple[str, ...] = ("text/xml", "application/xml", "application/vnd.ogc.wms_xml")
        else:
            wanted = CONTENT_TYPES.get(link["name"], (link["mime"].split(";")[0],))
        if response.status_code != 200 or content_type not in wanted:
            failures.append(f"{link['name']} {link['url']}: {response.status_code} {content_type} "
                            f"{response.text[:200] if 'image' not in content_type else ''}")
    assert not failures, "\n".join(failures)


def test_every_vector_link_resolves(client, polygons):
    record = client.get(f"/api/v2/datasets/{polygons.id}").json()["dataset"]
    assert {"OGC:WMS", "OGC:WFS", "OGC:WMTS"} <= {link["link_type"] for link in record["links"]}
    _check_links(client, record, VECTOR_LINKS)


def test_every_raster_link_resolves(client, raster):
    record = client.get(f"/api/v2/datasets/{raster.id}").json()["dataset"]
    assert {"OGC:WMS", "OGC:WCS", "OGC:WMTS"} <= {link["link_type"] for link in record["links"]}
    assert "OGC:WFS" not in {link["link_type"] for link in record["links"]}
    _check_links(client, record, RASTER_LINKS)


def test_links_of_a_private_dataset_resolve_for_its_owner(client, db, settings, polygons, owner_auth):
    make_private(db, settings, polygons)
    record = client.get(f"/api/v2/datasets/{polygons.id}", headers=owner_auth).json()["dataset"]
    _check_links(client, record, VECTOR_LINKS, owner_auth)


def test_wms_image_link_draws_the_data(client, polygons):
    record = client.get(f"/api/v2/datasets/{polygons.id}").json()["dataset"]
    png = next(link for link in record["links"] if link["name"] == "PNG")
    image = pixels(client.get(png["url"]).content)
    height, width = image.shape[:2]
    assert max(width, height) == 550
    # north-west square (red) fills the upper left quarter of the 0..20 x 40..60 box
    assert tuple(image[height // 4, width // 4][:3]) == (255, 0, 0)


# -- permissions ----------------------------------------------------------------------------


def test_private_dataset_is_invisible_to_anonymous(client, db, settings, polygons, owner_auth, admin_auth):
    make_private(db, settings, polygons)
    assert client.get("/api/v2/datasets").json()["total"] == 0
    response = client.get(f"/api/v2/datasets/{polygons.id}")
    assert response.status_code == 401
    assert response.json() == sample("036_GET_dataset-detail-private_anonymous.json")
    for path in ("maplayers", "maps", "attribute_set"):
        assert client.get(f"/api/v2/datasets/{polygons.id}/{path}").status_code == 401
    other = make_user(db, "stranger")
    assert client.get(f"/api/v2/datasets/{polygons.id}", headers=basic(other.username, PASSWORD)
                      ).status_code == 403
    assert client.get("/api/v2/datasets", headers=owner_auth).json()["total"] == 1
    assert client.get(f"/api/v2/datasets/{polygons.id}", headers=admin_auth).status_code == 200


def test_datasets_cannot_be_created_or_deleted_here(client, polygons, owner_auth):
    assert client.post("/api/v2/datasets", json={"title": "x"}, headers=owner_auth).status_code == 405
    assert client.delete(f"/api/v2/datasets/{polygons.id}", headers=owner_auth).status_code == 405


def test_other_types_are_not_datasets(client, db, settings, owner):
    document = make_resource(db, settings, owner, "A document", resource_type="document")
    assert client.get(f"/api/v2/datasets/{document.id}").status_code == 404
    assert client.get(f"/api/v2/datasets/{document.id}/maps").status_code == 404


# -- maps and map layers --------------------------------------------------------------------


def test_maps_and_maplayers_are_bare_lists(client, polygons):
    for path, name in (("maps", "034_GET_dataset-maps.json"),
                       ("maplayers", "035_GET_dataset-maplayers.json")):
        response = client.get(f"/api/v2/datasets/{polygons.id}/{path}")
        assert response.status_code == 200
        assert response.json() == sample(name) == []
        paged = client.get(f"/api/v2/datasets/{polygons.id}/{path}/", params={"page": 1, "page_size": 5,
                                                                               "search": "x"})
        assert paged.status_code == 200 and paged.json() == []
        url = f"/api/v2/datasets/{polygons.id}/{path}"
        assert client.get(url, params={"page_size": 0}).status_code == 400
        assert client.get(url, params={"page": 2}).status_code == 404


# -- related objects ------------------------------------------------------------------------


def test_related_objects(client, polygons):
    attributes = client.get(f"/api/v2/datasets/{polygons.id}/attribute_set")
    assert attributes.status_code == 200
    items = attributes.json()["attributes"]
    assert {a["attribute"] for a in items} >= {"name", "color", "rank", "area"}
    wanted = {"pk", "attribute", "attribute_label", "description", "attribute_type"}
    assert all(wanted <= set(a) for a in items)
    styles = client.get(f"/api/v2/datasets/{polygons.id}/styles").json()["styles"]
    assert styles[0]["name"] == polygons.name
    keywords = client.get(f"/api/v2/datasets/{polygons.id}/keywords")
    assert keywords.status_code == 200 and keywords.json() == {"keywords": []}
    assert client.get(f"/api/v2/datasets/{polygons.id}/nosuch").status_code == 400


# -- writes ---------------------------------------------------------------------------------


def _attributes(client, resource_id, headers=None) -> dict[str, dict]:
    record = client.get(f"/api/v2/datasets/{resource_id}", headers=headers or {}).json()["dataset"]
    return {a["attribute"]: a for a in record["attribute_set"]}


def test_patch_attributes_and_template(client, polygons, owner_auth):
    rank = _attributes(client, polygons.id)["rank"]
    body = {"title": "Renamed", "featureinfo_custom_template": "<b>${properties.name}</b>",
            "attribute_set": [{"pk": rank["pk"], "attribute_label": "Rank", "description": "Order",
                               "visible": False, "display_order": 9,
                               "featureinfo_type": "type_href"}]}
    response = client.patch(f"/api/v2/datasets/{polygons.id}/", json=body, headers=owner_auth)
    assert response.status_code == 200, response.text
    record = response.json()["dataset"]
    assert record["title"] == "Renamed"
    assert record["featureinfo_custom_template"] == "<b>${properties.name}</b>"
    changed = {a["attribute"]: a for a in record["attribute_set"]}["rank"]
    assert (changed["attribute_label"], changed["description"], changed["visible"],
            changed["display_order"], changed["featureinfo_type"]) == ("Rank", "Order", False, 9, "type_href")
    assert record["attribute_set"][-1]["attribute"] == "rank"  # ordered by display_order
    assert _attributes(client, polygons.id)["rank"] == changed


def test_geonodectl_attribute_patch_by_name(client, polygons, owner_auth):
    response = client.patch(f"/api/v2/datasets/{polygons.id}/", headers=owner_auth,
                            json={"attribute": [{"attribute": "name", "attribute_label": "Name"}]})
    assert response.status_code == 200, response.text
    assert _attributes(client, polygons.id)["name"]["attribute_label"] == "Name"


RANK = "<pk of rank>"


@pytest.mark.parametrize("item", [
    {"pk": 999999, "attribute_label": "x"},
    {"attribute_label": "no pk"},
    {"pk": RANK, "visible": "yes"},
    {"pk": RANK, "display_order": -1},
    {"pk": RANK, "featureinfo_type": "type_nonsense"},
    {"pk": RANK, "attribute_type": "xsd:string"},
    {"pk": RANK, "count": 12345},
    {"pk": RANK, "colour": "red"},
    {"pk": RANK, "attribute_label": "x" * 256},
])
def test_bad_attribute_patch_changes_nothing(client, polygons, owner_auth, item):
    before = client.get(f"/api/v2/datasets/{polygons.id}").json()["dataset"]
    rank = {a["attribute"]: a for a in before["attribute_set"]}["rank"]
    entry = {k: rank["pk"] if v == RANK else v for k, v in item.items()}
    body = {"title": "Must not change", "featureinfo_custom_template": "<i>x</i>", "attribute_set": [entry]}
    response = client.patch(f"/api/v2/datasets/{polygons.id}", json=body, headers=owner_auth)
    assert response.status_code == 400, response.text
    assert response.json()["success"] is False
    after = client.get(f"/api/v2/datasets/{polygons.id}").json()["dataset"]
    for key in ("title", "featureinfo_custom_template", "attribute_set", "last_updated"):
        assert after[key] == before[key], key


def test_read_only_dataset_fields(client, polygons, owner_auth):
    for key, value in (("name", "other"), ("workspace", "x"), ("has_time", True), ("styles", []),
                       ("ows_url", "http://elsewhere/ows")):
        response = client.patch(f"/api/v2/datasets/{polygons.id}", json={key: value}, headers=owner_auth)
        assert response.status_code == 400, key
    bad = client.patch(f"/api/v2/datasets/{polygons.id}", json={"featureinfo_custom_template": 5},
                       headers=owner_auth)
    assert bad.status_code == 400


def test_put_back_what_was_read(client, polygons, owner_auth):
    record = client.get(f"/api/v2/datasets/{polygons.id}", headers=owner_auth).json()["dataset"]
    record["abstract"] = "Edited by a client that PUTs the whole record back"
    response = client.put(f"/api/v2/datasets/{polygons.id}", json={"dataset": record}, headers=owner_auth)
    assert response.status_code == 200, response.text
    assert response.json()["dataset"]["abstract"] == record["abstract"]


def test_patch_needs_metadata_permission(client, db, polygons):
    reader = make_user(db, "reader")
    response = client.patch(f"/api/v2/datasets/{polygons.id}", json={"featureinfo_custom_template": "x"},
                            headers=basic(reader.username, PASSWORD))
    assert response.status_code == 403
    assert client.patch(f"/api/v2/datasets/{polygons.id}", json={"title": "x"}).status_code == 401


# -- filters --------------------------------------------------------------------------------


def test_filter_on_dataset_fields(client, polygons, points):
    def pks(**params):
        return {r["pk"] for r in client.get("/api/v2/datasets", params=params).json()["datasets"]}

    assert pks(**{"filter{has_time}": "true"}) == {str(points.id)}
    assert pks(**{"filter{subtype}": "vector"}) == {str(polygons.id)}
    assert pks(**{"filter{workspace}": "geonode"}) == {str(polygons.id), str(points.id)}
    assert pks(**{"sort[]": "-store"}) == {str(polygons.id), str(points.id)}
    assert client.get("/api/v2/datasets", params={"filter{nosuch}": "1"}).status_code == 400


def test_time_dataset_record(client, points):
    record = client.get(f"/api/v2/datasets/{points.id}").json()["dataset"]
    assert record["has_time"] is True and record["subtype"] == "vector_time"
    assert record["temporal_extent_start"].startswith("2024-01-01")
    assert next(a for a in record["attribute_set"] if a["attribute"] == "value")["count"] == POINT_COUNT


# -- embed ----------------------------------------------------------------------------------


def test_embed_page_shows_the_map(client, polygons):
    record = client.get(f"/api/v2/datasets/{polygons.id}").json()["dataset"]
    page = client.get(record["embed_url"])
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "request=GetMap" in page.text and polygons.title in page.text


# -- statement counts -----------------------------------------------------------------------


def _grow(db, settings, owner, count: int) -> None:
    """Dataset rows made directly (hundreds of real ingests would be slow); shaped as ingest
    makes them: a resource, a dataset row, attributes and a default style."""
    existing = len(db.scalars(select(Resource.id).where(Resource.resource_type == "dataset")).all())
    for i in range(existing, count):
        name = f"layer_{i:03d}"
        resource = make_resource(db, settings, owner, f"Layer {i}", extent=(i % 90, 0, i % 90 + 1, 1),
                                 keywords=["shared"], subtype="vector", name=name,
                                 alternate=f"geonode:{name}")
        db.add(Dataset(resource_id=resource.id, workspace="geonode", name=name, store=name,
                       storage="geopackage", location=f"{name}.gpkg", layer=name, geometry_column="geom",
                       geometry_type="Point", fid_column="fid", feature_count=1, native_srid=4326))
        db.flush()
        db.add_all([DatasetAttribute(dataset_id=resource.id, attribute=f"a{j}", display_order=j)
                    for j in range(3)])
        db.add(Style(dataset_id=resource.id, name=name, workspace="geonode", sld_title=name,
                     sld_body="<StyledLayerDescriptor/>", is_default=True))
        db.commit()


def test_list_statement_count_is_constant(client, db, settings, owner, owner_auth, count_statements):
    counts = {}
    for size in (20, 200):
        _grow(db, settings, owner, size)
        for who, headers in (("anonymous", {}), ("owner", owner_auth)):
            with count_statements() as counter:
                response = client.get("/api/v2/datasets", params={"page_size": size}, headers=headers)
            body = response.json()
            assert len(body["datasets"]) == size
            assert all(r["default_style"] and r["workspace"] == "geonode" for r in body["datasets"])
            counts[(who, size)] = counter.value
    print(f"\nSTATEMENTS datasets list: {counts}")
    for who in ("anonymous", "owner"):
        assert counts[(who, 20)] == counts[(who, 200)], counts
        assert counts[(who, 200)] <= LIST_BUDGET, counts


def test_detail_link_urls_point_at_this_site(client, make_app, db, settings, polygons):
    app = make_app(SITEURL="https://maps.example.org/sub/")
    with TestClient(app) as other:
        record = other.get(f"/api/v2/datasets/{polygons.id}").json()["dataset"]
    for link in record["links"]:
        assert link["url"].startswith("https://maps.example.org/sub/"), link
    assert urlsplit(record["download_url"]).path == f"/sub/datasets/{record['alternate']}/dataset_download"


# -- metadata upload ------------------------------------------------------------------------


def _upload_metadata(client, resource_id, text, headers):
    return client.put(f"/api/v2/datasets/{resource_id}/metadata", headers=headers,
                      files={"metadata_file": ("metadata.xml", text.encode("utf-8"), "text/xml")})


def test_metadata_upload_updates_the_record(client, db, polygons, owner_auth):
    ana = make_user(db, "ana")
    response = _upload_metadata(client, polygons.id, gmd(polygons.uuid), owner_auth)
    assert response.status_code == 200, response.text
    assert response.json() == {"success": True, "message": ["Metadata successfully updated"]}
    record = client.get(f"/api/v2/datasets/{polygons.id}").json()["dataset"]
    assert record["title"] == "Rivers of the plain" and record["purpose"] == "Flood planning"
    assert {k["name"] for k in record["keywords"]} == {"hydrography", "rivers", "Floodplains"}
    assert record["category"]["identifier"] == "inlandWaters"
    assert record["license"] == {"identifier": "CC-BY-4.0"}
    assert record["date"].startswith("2019-05-04") and record["date_type"] == "creation"
    assert record["temporal_extent_start"].startswith("2001-01-01")
    assert [u["username"] for u in record["poc"]] == [ana.username]
    # the data and its dataset fields are untouched
    assert record["alternate"] == f"geonode:{polygons.name}" and record["attribute_set"]


def test_metadata_upload_in_19115_3(client, polygons, owner_auth):
    response = _upload_metadata(client, polygons.id, mdb(polygons.uuid), owner_auth)
    assert response.status_code == 200, response.text
    record = client.get(f"/api/v2/datasets/{polygons.id}").json()["dataset"]
    assert record["title"] == "Forêts du massif" and record["language"] == "fra"


def test_refused_metadata_changes_nothing(client, polygons, owner_auth):
    before = client.get(f"/api/v2/datasets/{polygons.id}").json()["dataset"]
    cases = {
        "xxe": docs.XXE_DOCUMENT,
        "billion laughs": docs.BILLION_LAUGHS,
        "late external entity": docs.EXTERNAL_ENTITY_LATE,
        "malformed": docs.MALFORMED,
        "not iso": docs.NOT_ISO,
        "other uuid": docs.gmd("11111111-2222-3333-4444-555555555555"),
        "empty": "",
    }
    for name, text in cases.items():
        response = _upload_metadata(client, polygons.id, text, owner_auth)
        assert response.status_code == 400, (name, response.text)
        assert response.json()["success"] is False, name
        assert "root:" not in response.text  # nothing of /etc/passwd
    after = client.get(f"/api/v2/datasets/{polygons.id}").json()["dataset"]
    assert after == before


def test_metadata_upload_permissions_and_form(client, db, polygons, owner_auth):
    text = gmd(polygons.uuid)
    assert _upload_metadata(client, polygons.id, text, {}).status_code == 401
    reader = make_user(db, "reader")
    assert _upload_metadata(client, polygons.id, text, basic(reader.username, PASSWORD)).status_code == 403
    missing = client.put(f"/api/v2/datasets/{polygons.id}/metadata", headers=owner_auth,
                         files={"other": ("x.xml", b"<a/>", "text/xml")})
    assert missing.status_code == 400 and "metadata_file" in missing.json()["errors"][0]
    assert _upload_metadata(client, 999999, text, owner_auth).status_code == 404
    assert client.get(f"/api/v2/datasets/{polygons.id}").json()["dataset"]["title"] == "Polygons"
