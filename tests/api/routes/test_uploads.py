"""The dataset upload endpoint and the upload records, over HTTP with the real ingest behind."""

from __future__ import annotations

import zipfile

import numpy as np
import pytest
import rasterio
import shapely
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import selectinload

from cartotheca.db.models import Dataset, ExecutionRequest, Resource, Upload
from cartotheca.geodata.storage import FeatureQuery, stored_layer
from cartotheca.geodata.storage.stores import raster_store, vector_store
from tests.catalogue.iso_documents import GMD_DOCUMENT
from tests.conftest import basic
from tests.factories import PASSWORD, make_user
from tests.geodata import fixtures as fx

GEONODECTL_PERMISSIONS = '{ "users": {"AnonymousUser": ["view_resourcebase"]} , "groups":{}}'


@pytest.fixture
def ana(db):
    return make_user(db, "ana")


@pytest.fixture
def auth(ana):
    return basic("ana", PASSWORD)


def dataset_for(db, record: dict) -> tuple[Resource, Dataset]:
    db.expire_all()
    [item] = record["output_params"]["resources"]
    resource = db.get(Resource, item["id"])
    dataset = db.scalar(select(Dataset).where(Dataset.resource_id == resource.id)
                        .options(selectinload(Dataset.attributes)))
    return resource, dataset


def features(settings, dataset: Dataset):
    batch = vector_store(settings, dataset.storage).query(stored_layer(dataset), FeatureQuery())
    names = batch.properties["name"]
    return {names[i]: (batch.properties, i, batch.geometries[i]) for i in range(len(batch))}


def check_points(settings, dataset: Dataset, name_field: str = "name") -> None:
    got = features(settings, dataset)
    assert len(got) == fx.POINT_COUNT
    for row in fx.POINTS:
        props, i, geometry = got[row["name"]]
        assert props["value"][i] == pytest.approx(row["value"])
        assert props["category"][i] == row["category"]
        assert shapely.equals_exact(geometry, shapely.Point(row["lon"], row["lat"]), 1e-9)


# -- round trips ----------------------------------------------------------------------------


@pytest.mark.parametrize("driver", ["ESRI Shapefile", "GeoJSON", "GPKG", "FlatGeobuf"])
def test_vector_upload_round_trip(client, db, settings, auth, tmp_path, driver):
    record = fx.upload_and_wait(client, auth, fx.write_points(tmp_path, "rivers_2024", driver=driver))
    assert record["status"] == "finished", record
    assert record["action"] == "import" and record["func_name"] == "import_upload"
    resource, dataset = dataset_for(db, record)
    assert record["output_params"]["detail_url"] == [f"http://testserver/catalogue/#/dataset/{resource.id}"]
    assert resource.title == "rivers_2024" and dataset.name == "rivers_2024"
    assert dataset.feature_count == fx.POINT_COUNT and dataset.native_srid == 4326
    assert {a.attribute for a in dataset.attributes} >= {"id", "name", "value", "category", "observed"}
    check_points(settings, dataset)


def test_csv_upload_round_trip(client, db, settings, auth, tmp_path):
    record = fx.upload_and_wait(client, auth, fx.write_points_csv(tmp_path, "stations"))
    assert record["status"] == "finished", record
    _, dataset = dataset_for(db, record)
    check_points(settings, dataset)


def test_kml_upload_round_trip(client, db, settings, auth, tmp_path):
    record = fx.upload_and_wait(client, auth, fx.write_points(tmp_path, "sites", driver="KML"))
    assert record["status"] == "finished", record
    _, dataset = dataset_for(db, record)
    assert dataset.feature_count == fx.POINT_COUNT and dataset.native_srid == 4326
    batch = vector_store(settings, dataset.storage).query(stored_layer(dataset), FeatureQuery())
    names = {f.lower(): f for f in batch.properties}
    got = sorted(zip(batch.properties[names["name"]], batch.geometries, strict=True), key=lambda p: p[0])
    expected = sorted(fx.POINTS, key=lambda r: r["name"])
    for (name, geometry), row in zip(got, expected, strict=True):
        assert name == row["name"]
        assert shapely.equals_exact(shapely.force_2d(geometry), shapely.Point(row["lon"], row["lat"]), 1e-9)


def test_zipped_shapefile_upload(client, db, settings, auth, tmp_path):
    shp = fx.write_points(tmp_path / "src", "roads", driver="ESRI Shapefile")
    archive = tmp_path / "roads.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for part in shp.parent.iterdir():
            zf.write(part, f"roads/{part.name}")
    response = fx.post_upload(client, auth, archive, extra_files={"zip_file": archive})
    assert response.status_code == 200, response.text
    record = fx.wait_execution(client, auth, response.json()["execution_id"])
    assert record["status"] == "finished", record
    resource, dataset = dataset_for(db, record)
    assert resource.title == "roads"
    check_points(settings, dataset)


def test_zip_with_several_datasets_publishes_each(client, db, settings, auth, tmp_path):
    shp = fx.write_points(tmp_path / "src", "wells", driver="ESRI Shapefile")
    lines = fx.write_lines(tmp_path / "src2", "roads", driver="GeoJSON")
    archive = tmp_path / "bundle.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for part in shp.parent.iterdir():
            zf.write(part, part.name)
        zf.write(lines, lines.name)
    record = fx.upload_and_wait(client, auth, archive)
    assert record["status"] == "finished", record
    ids = [r["id"] for r in record["output_params"]["resources"]]
    assert len(ids) == 2 and len(record["output_params"]["detail_url"]) == 2
    db.expire_all()
    counts = {d.name: d.feature_count for d in db.scalars(select(Dataset))}
    assert counts == {"wells": fx.POINT_COUNT, "roads": 3}


def test_geotiff_upload_is_pixel_identical(client, db, settings, auth, tmp_path):
    source = fx.write_raster(tmp_path, "elevation", bands=2, crs="EPSG:32632",
                             bounds=(500000, 5000000, 506400, 5004800))
    record = fx.upload_and_wait(client, auth, source)
    assert record["status"] == "finished", record
    resource, dataset = dataset_for(db, record)
    assert resource.subtype == "raster" and resource.srid == "EPSG:32632"
    assert 8.9 < resource.ll_minx < 9.1 and 45.1 < resource.ll_miny < 45.2
    with rasterio.open(source) as src, rasterio.open(raster_store(settings).path(dataset.location)) as cog:
        assert cog.crs == src.crs and cog.transform.almost_equals(src.transform)
        assert np.array_equal(cog.read(), src.read())


def test_put_is_the_same_as_post_and_the_slash_is_optional(client, db, auth, tmp_path):
    path = fx.write_points(tmp_path, driver="GeoJSON")
    response = fx.post_upload(client, auth, path, method="PUT", url="/api/v2/uploads/upload/")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "ready" and set(body) == {"status", "execution_id", "status_url"}
    assert body["status_url"].endswith(f"/api/v2/resource-service/execution-status/{body['execution_id']}")
    assert fx.wait_execution(client, auth, body["execution_id"])["status"] == "finished"


def test_title_time_and_sld_options(client, db, settings, auth, tmp_path):
    sld = tmp_path / "colours.sld"
    sld.write_text(fx.polygons_sld())
    response = fx.post_upload(client, auth, fx.write_points(tmp_path, driver="ESRI Shapefile"),
                              extra_files={"sld_file": sld}, layer_title="Observed points", time="True")
    assert response.status_code == 200, response.text
    record = fx.wait_execution(client, auth, response.json()["execution_id"])
    assert record["status"] == "finished", record
    resource, dataset = dataset_for(db, record)
    assert resource.title == "Observed points" and resource.subtype == "vector_time"
    assert dataset.has_time and dataset.time_attribute == "observed"
    db.expire_all()
    styled = db.scalar(select(Dataset).where(Dataset.resource_id == resource.id)
                       .options(selectinload(Dataset.styles)))
    assert "#ff00ff" in styled.styles[0].sld_body


def test_iso_metadata_file_fills_the_record(client, db, auth, tmp_path):
    xml = tmp_path / "rivers.xml"
    xml.write_text(GMD_DOCUMENT.replace("{uuid}", "9b0c1a52-8a4e-4d43-9d53-000000000001"))
    response = fx.post_upload(client, auth, fx.write_points(tmp_path, driver="GeoJSON"),
                              extra_files={"xml_file": xml})
    assert response.status_code == 200, response.text
    record = fx.wait_execution(client, auth, response.json()["execution_id"])
    assert record["status"] == "finished", record
    resource, _ = dataset_for(db, record)
    assert resource.title == "Rivers of the plain"
    assert resource.abstract.startswith("Every river of the plain")


def test_xml_file_that_is_not_iso_is_refused(client, db, auth, tmp_path):
    xml = tmp_path / "other.xml"
    xml.write_text("<catalog><book>not metadata</book></catalog>")
    response = fx.post_upload(client, auth, fx.write_points(tmp_path, driver="GeoJSON"),
                              extra_files={"xml_file": xml})
    assert response.status_code == 400, response.text
    no_records(db)


def test_overwrite_existing_layer(client, db, settings, auth, tmp_path):
    first = fx.upload_and_wait(client, auth, fx.write_points(tmp_path, "wells", driver="GeoJSON"))
    resource, _ = dataset_for(db, first)
    smaller = fx.write_points(tmp_path / "b", "wells", driver="GeoJSON", count=3)
    second = fx.upload_and_wait(client, auth, smaller, overwrite_existing_layer="True",
                                resource_pk=str(resource.id))
    assert second["status"] == "finished", second
    again, dataset = dataset_for(db, second)
    assert again.id == resource.id and dataset.feature_count == 3
    assert db.scalar(select(func.count()).select_from(Dataset)) == 1


# -- upload records -------------------------------------------------------------------------


def test_upload_record_follows_the_import(client, db, auth, tmp_path):
    record = fx.upload_and_wait(client, auth, fx.write_points(tmp_path, "lakes", driver="GeoJSON"))
    resource_id = record["output_params"]["resources"][0]["id"]
    listing = client.get("/api/v2/uploads/", headers=auth).json()
    assert listing["total"] == 1 and listing["page"] == 1
    [item] = listing["uploads"]
    assert item["state"] == "PROCESSED" and item["progress"] == 100.0 and item["complete"] is True
    assert item["name"] == "lakes" and item["detail_url"] == f"/catalogue/#/dataset/{resource_id}"
    assert item["uploadfile_set"][0]["slug"] == "lakes.geojson"
    for key in ("id", "date", "create_date", "user", "import_id", "resume_url", "delete_url",
                "import_url", "link"):
        assert key in item
    detail = client.get(f"/api/v2/uploads/{item['id']}", headers=auth)
    assert detail.status_code == 200 and detail.json()["upload"] == item
    assert client.get(f"/api/v2/uploads/{item['id']}/state", headers=auth).json() == {"state": "PROCESSED"}
    assert client.get(f"/api/v2/uploads/{item['id']}/nothing", headers=auth).status_code == 404
    final = client.put(f"/upload/final?id={item['id']}", headers=auth).json()
    assert final["status"] == "finished" and final["success"] is True and final["id"] == resource_id
    assert final["crs"] == {"type": "name", "properties": "EPSG:4326"}
    assert [float(v) for v in final["bbox"].split(",")] == pytest.approx([-10, 40, 8, 49])


def test_upload_record_is_running_while_the_import_works(make_app, db, tmp_path):
    make_user(db, "ana")
    auth = basic("ana", PASSWORD)
    with TestClient(make_app(EXECUTION_STEP_DELAY=0.5)) as client:
        response = fx.post_upload(client, auth, fx.write_points(tmp_path, driver="GeoJSON"))
        assert response.status_code == 200
        seen = set()
        while True:
            [item] = client.get("/api/v2/uploads", headers=auth).json()["uploads"]
            if item["state"] == "RUNNING" and not any(state == "RUNNING" for state, _ in seen):
                # the first sight of RUNNING is in the first step: the import is far from done
                refused = client.delete(f"/api/v2/uploads/{item['id']}", headers=auth)
                assert refused.status_code == 409
            seen.add((item["state"], item["progress"]))
            if item["state"] in ("PROCESSED", "INVALID"):
                break
        assert ("RUNNING", 80.0) in seen and item["state"] == "PROCESSED"
        fx.wait_execution(client, auth, response.json()["execution_id"])


def test_failed_import_is_invalid_with_its_reason(client, db, auth, tmp_path):
    path = tmp_path / "empty.geojson"
    path.write_text('{"type":"FeatureCollection","features":[]}')
    record = fx.upload_and_wait(client, auth, path)
    assert record["status"] == "failed" and "no features" in record["log"]
    [item] = client.get("/api/v2/uploads/", headers=auth).json()["uploads"]
    assert item["state"] == "INVALID" and item["progress"] == 0.0 and item["complete"] is False
    assert "no features" in item["error"]
    final = client.put(f"/upload/final?id={item['id']}", headers=auth).json()
    assert final["status"] == "failed" and final["success"] is False


def test_uploads_are_private_to_their_owner_and_staff(client, db, auth, admin_auth, tmp_path):
    make_user(db, "bob")
    fx.upload_and_wait(client, auth, fx.write_points(tmp_path, driver="GeoJSON"))
    [item] = client.get("/api/v2/uploads", headers=auth).json()["uploads"]
    bob = basic("bob", PASSWORD)
    assert client.get("/api/v2/uploads", headers=bob).json()["uploads"] == []
    assert client.get(f"/api/v2/uploads/{item['id']}", headers=bob).status_code == 404
    assert client.get("/api/v2/uploads", headers=admin_auth).json()["total"] == 1
    assert client.get("/api/v2/uploads").status_code == 401


def test_upload_list_filters_search_and_ordering(client, db, auth, tmp_path):
    fx.upload_and_wait(client, auth, fx.write_points(tmp_path, "alpha", driver="GeoJSON"))
    empty = tmp_path / "beta.geojson"
    empty.write_text('{"type":"FeatureCollection","features":[]}')
    fx.upload_and_wait(client, auth, empty)
    by_state = client.get("/api/v2/uploads?filter{state}=INVALID", headers=auth).json()
    assert [u["name"] for u in by_state["uploads"]] == ["beta"]
    searched = client.get("/api/v2/uploads?search=alp", headers=auth).json()
    assert [u["name"] for u in searched["uploads"]] == ["alpha"]
    ordered = client.get("/api/v2/uploads?ordering=name", headers=auth).json()
    assert [u["name"] for u in ordered["uploads"]] == ["alpha", "beta"]
    assert client.get("/api/v2/uploads?filter{nope}=1", headers=auth).status_code == 400
    assert client.get("/api/v2/uploads?sort_by=date_updated", headers=auth).status_code == 200


def test_upload_list_costs_the_same_whatever_the_page_size(client, db, ana, auth, count_statements):
    for i in range(6):
        db.add(Upload(user_id=ana.id, name=f"layer{i}", title=f"layer{i}", state="PROCESSED",
                      complete=True, files=[{"name": f"layer{i}", "slug": f"layer{i}.shp", "file": "x"}]))
    db.commit()
    with count_statements() as small:
        assert len(client.get("/api/v2/uploads?page_size=2", headers=auth).json()["uploads"]) == 2
    with count_statements() as large:
        assert len(client.get("/api/v2/uploads?page_size=6", headers=auth).json()["uploads"]) == 6
    assert small.value == large.value <= 6  # authentication, count, page ids, page rows


def test_upload_records_are_read_only_and_deletable(client, db, auth, tmp_path):
    fx.upload_and_wait(client, auth, fx.write_points(tmp_path, driver="GeoJSON"))
    item = client.get("/api/v2/uploads", headers=auth).json()["uploads"][0]
    assert client.patch(f"/api/v2/uploads/{item['id']}", headers=auth,
                        json={"state": item["state"]}).status_code == 200
    changed = client.patch(f"/api/v2/uploads/{item['id']}", headers=auth, json={"state": "READY"})
    assert changed.status_code == 400 and "read-only" in changed.json()["errors"][0]
    assert client.delete(f"/api/v2/uploads/{item['id']}", headers=auth).status_code == 204
    assert client.get(f"/api/v2/uploads/{item['id']}", headers=auth).status_code == 404
    db.expire_all()
    assert db.scalar(select(func.count()).select_from(Upload)) == 0
    assert db.scalar(select(func.count()).select_from(Dataset)) == 1  # the dataset stays


# -- refused before anything starts ---------------------------------------------------------


def no_records(db) -> None:
    db.expire_all()
    for model in (Upload, ExecutionRequest, Resource):
        assert db.scalar(select(func.count()).select_from(model)) == 0


def test_anonymous_upload_is_refused(client, db, tmp_path):
    response = fx.post_upload(client, {}, fx.write_points(tmp_path))
    assert response.status_code == 401
    no_records(db)


def test_missing_base_file(client, db, auth):
    response = client.post(fx.UPLOAD_URL, headers=auth, data={"charset": "UTF-8"},
                           files={"dbf_file": ("a.dbf", b"x")})
    assert response.status_code == 400 and "base_file" in response.json()["errors"][0]
    no_records(db)


def test_unsupported_type(client, db, auth):
    response = client.post(fx.UPLOAD_URL, headers=auth, files={"base_file": ("photo.png", b"\x89PNG")})
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "importer_exception" and "No handlers found" in body["errors"][0]
    no_records(db)


def test_shapefile_without_its_parts(client, db, auth, tmp_path):
    shp = fx.write_points(tmp_path, driver="ESRI Shapefile")
    response = client.post(fx.UPLOAD_URL, headers=auth,
                           files={"base_file": (shp.name, shp.read_bytes())})
    assert response.status_code == 400 and "shx_file" in response.json()["errors"][0]
    no_records(db)


def test_upload_over_the_size_limit(make_app, db, tmp_path):
    make_user(db, "ana")
    app = make_app(DEFAULT_MAX_UPLOAD_SIZE=4096)
    big = tmp_path / "big.geojson"
    big.write_bytes(b" " * 10_000)
    with TestClient(app) as client:
        response = fx.post_upload(client, basic("ana", PASSWORD), big)
    assert response.status_code == 400
    assert response.json()["code"] == "total_upload_size_exceeded"
    no_records(db)


def test_bad_permissions_option(client, db, auth, tmp_path):
    response = fx.post_upload(client, auth, fx.write_points(tmp_path), permissions="{not json")
    assert response.status_code == 400 and "permissions" in response.json()["errors"][0]
    response = fx.post_upload(client, auth, fx.write_points(tmp_path),
                              permissions='{"users": {"nobody-here": ["view_resourcebase"]}}')
    assert response.status_code == 400
    no_records(db)


def test_geonodectl_style_flags_are_accepted(client, db, auth, tmp_path):
    record = fx.upload_and_wait(client, auth, fx.write_points(tmp_path, driver="GeoJSON"),
                                mosaic="False", time="False", non_interactive="True",
                                overwrite_existing_layer="False", skip_existing_layers="False",
                                permissions=GEONODECTL_PERMISSIONS)
    assert record["status"] == "finished", record



# -- thumbnails of large layers ------------------------------------------------------------


def test_a_large_layer_gets_its_thumbnail_from_a_follow_up_execution(make_app, db, tmp_path):
    make_user(db, "ana")
    auth = basic("ana", PASSWORD)
    # Layers of more features than this are drawn by an execution of their own.
    app = make_app(THUMBNAIL_INLINE_MAX_FEATURES=len(fx.POLYGONS))
    assert fx.POINT_COUNT > len(fx.POLYGONS)

    def thumbnail_runs(resource_id: int) -> list[ExecutionRequest]:
        return db.scalars(select(ExecutionRequest).where(
            ExecutionRequest.func_name == "dataset_thumbnail",
            ExecutionRequest.resource_id == resource_id)).all()

    with TestClient(app) as client:
        record = fx.upload_and_wait(client, auth, fx.write_points(tmp_path, "many_wells"))
        assert record["status"] == "finished", record
        resource, _ = dataset_for(db, record)
        [follow_up] = thumbnail_runs(resource.id)
        assert follow_up.user_id == resource.owner_id and follow_up.action == "thumbnail"
        done = fx.wait_execution(client, auth, follow_up.exec_id)
        assert done["status"] == "finished", done
        db.expire_all()
        resource = db.get(Resource, resource.id)
        assert resource.thumbnail_url == f"http://testserver/thumbnails/{resource.uuid}.png"
        png = client.get(f"/thumbnails/{resource.uuid}.png")
        assert png.status_code == 200 and png.content.startswith(b"\x89PNG")

        # A layer at the limit is drawn by the import itself: no execution of its own.
        small = fx.upload_and_wait(client, auth, fx.write_polygons(tmp_path / "s", "few_lakes"))
        assert small["status"] == "finished", small
        small_resource, _ = dataset_for(db, small)
        assert small_resource.thumbnail_url == f"http://testserver/thumbnails/{small_resource.uuid}.png"
        assert thumbnail_runs(small_resource.id) == []
