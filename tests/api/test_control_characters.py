"""Text that no XML document can carry (C0 controls, NUL among them) is refused when a client
stores it: a 400 naming the field, on SQLite as on PostgreSQL, and nothing is changed."""

from __future__ import annotations

import numpy as np
import pytest
import shapely
from sqlalchemy import func, select

from cartotheca.db.models import Group, Resource, User
from cartotheca.errors import InvalidInput
from tests.api.routes.test_resource_files import grey_sld, send_file
from tests.api.test_bad_inputs import assert_error
from tests.catalogue.iso_documents import gmd
from tests.conftest import basic
from tests.factories import PASSWORD, make_user
from tests.geodata.fixtures import _write, post_upload, publish_file, write_polygons

BAD = ("\u0001", "\u0000", "\u001f", "\ufffe")


@pytest.fixture
def ana(db):
    return make_user(db, "ana")


@pytest.fixture
def ana_auth(ana):
    return basic("ana", PASSWORD)


@pytest.fixture
def dataset(db, settings, ana, tmp_path):
    return publish_file(db, settings, ana, write_polygons(tmp_path), title="Polygons")


@pytest.fixture
def document(client, ana_auth):
    created = client.post("/api/v2/documents", headers=ana_auth, data={"title": "Notes"},
                          files={"doc_file": ("notes.txt", b"plain notes", "text/plain")})
    assert created.status_code in (200, 201), created.text
    return created.json()["document"]["pk"]


@pytest.fixture
def geomap(client, ana_auth):
    created = client.post("/api/v2/maps", headers=ana_auth, json={"title": "Overview", "maplayers": []})
    assert created.status_code == 201, created.text
    return created.json()["map"]["pk"]


def titles(db) -> set[str]:
    db.expire_all()
    return set(db.scalars(select(Resource.title)))


@pytest.mark.parametrize("bad", BAD, ids=("U+0001", "NUL", "U+001F", "U+FFFE"))
def test_resource_edits_are_refused_naming_the_field(client, db, ana_auth, dataset, document,
                                                     geomap, bad):
    before = titles(db)
    edits = [
        ("PATCH", f"/api/v2/resources/{dataset.id}", {"title": f"Riv{bad}ers"}, "title"),
        ("PUT", f"/api/v2/datasets/{dataset.id}", {"abstract": f"about{bad}"}, "abstract"),
        ("PATCH", f"/api/v2/datasets/{dataset.id}", {"keywords": ["fine", f"key{bad}"]}, "keywords"),
        ("PATCH", f"/api/v2/documents/{document}", {"title": f"N{bad}"}, "title"),
        ("PUT", f"/api/v2/maps/{geomap}", {"abstract": f"a{bad}"}, "abstract"),
        ("PATCH", f"/api/v2/maps/{geomap}", {"blob": {"map": {"layers": [{"title": f"l{bad}"}]}}},
         "blob.map.layers[0].title"),
        ("PATCH", f"/api/v2/resources/{dataset.id}", {"purpose": f"p{bad}"}, "purpose"),
        ("POST", "/api/v2/maps", {"title": f"New{bad}map", "maplayers": []}, "title"),
    ]
    for method, url, body, field in edits:
        body_ = assert_error(client.request(method, url, headers=ana_auth, json=body), 400,
                             code="invalid", names=field)
        assert "control characters" in body_["errors"][0], (url, body_)
    # The same through a form-encoded body.
    form = client.patch(f"/api/v2/resources/{dataset.id}", headers=ana_auth, data={"title": f"a{bad}"})
    assert_error(form, 400, names="title")
    assert titles(db) == before


@pytest.mark.parametrize("bad", ("\u0001", "\u0000"), ids=("U+0001", "NUL"))
def test_uploads_are_refused_naming_the_field(client, db, ana_auth, dataset, tmp_path, bad):
    before = titles(db)
    upload = post_upload(client, ana_auth, write_polygons(tmp_path / "up"), layer_title=f"Up{bad}")
    assert_error(upload, 400, names="layer_title")
    document = client.post("/api/v2/documents", headers=ana_auth, data={"title": f"D{bad}"},
                           files={"doc_file": ("d.txt", b"plain", "text/plain")})
    assert_error(document, 400, names="title")
    assert titles(db) == before


def test_iso_metadata_with_a_control_character_is_refused(client, db, ana_auth, dataset):
    text = gmd(dataset.uuid).replace("Rivers of the plain", "Rivers &#1; of the plain")
    answer = client.put(f"/api/v2/datasets/{dataset.id}/metadata", headers=ana_auth,
                        files={"metadata_file": ("metadata.xml", text.encode(), "text/xml")})
    assert_error(answer, 400, names="metadata_file")
    assert titles(db) >= {"Polygons"}


def test_sld_with_a_control_character_is_refused(client, db, ana_auth, dataset):
    text = grey_sld().replace("<Name>grey</Name>", "<Name>grey</Name><Title>gr&#1;ey</Title>")
    answer = send_file(client, ana_auth, "resource_style_upload", dataset.id, text, "sld_file", "a.sld")
    assert_error(answer, 400)
    assert "sld" in answer.json()["errors"][0].lower(), answer.text


@pytest.mark.parametrize("bad", ("\u0001", "\u0000"), ids=("U+0001", "NUL"))
def test_user_and_group_names_are_refused(client, db, admin_auth, ana, ana_auth, bad):
    users = db.scalar(select(func.count()).select_from(User))
    groups = db.scalar(select(func.count()).select_from(Group))
    assert_error(client.post("/api/v2/users", headers=admin_auth,
                             json={"username": f"car{bad}la", "password": "long-enough-pass"}),
                 400, names="username")
    assert_error(client.patch(f"/api/v2/users/{ana.id}", headers=ana_auth,
                              json={"first_name": f"A{bad}na"}), 400, names="first_name")
    assert_error(client.post("/api/v2/groups", headers=admin_auth, json={"title": f"Hy{bad}dro"}),
                 400, names="title")
    db.expire_all()
    assert db.scalar(select(func.count()).select_from(User)) == users
    assert db.scalar(select(func.count()).select_from(Group)) == groups
    assert db.scalar(select(User.first_name).where(User.id == ana.id)) == ""


def test_data_files_with_control_characters_in_field_names_are_refused(db, settings, ana, tmp_path):
    """A field name becomes an attribute record and an XML element name: refused at ingest.
    Field values are data; the writers drop what XML cannot carry (see tests/ows)."""
    path = _write(tmp_path / "bad.gpkg", np.array([shapely.Point(1, 1)]),
                  {"na\u0001me": np.array(["x"], dtype=object)},
                  driver="GPKG", crs="EPSG:4326", geometry_type="Point")
    before = titles(db)
    with pytest.raises(InvalidInput, match="field name"):
        publish_file(db, settings, ana, path, title="Bad names")
    db.rollback()
    assert titles(db) == before


def test_text_written_by_domain_code_is_refused_or_cleaned(db, settings, ana, tmp_path):
    """An ingest option is refused like a form field; text reaching the session any other
    way (a harvested record, a job's message) is stored without the characters XML cannot
    carry, so no background write fails over one and no document breaks later."""
    before = titles(db)
    with pytest.raises(InvalidInput, match="title: text may not contain control characters"):
        publish_file(db, settings, ana, write_polygons(tmp_path), title="Bad\u0001title")
    db.rollback()
    assert titles(db) == before
    resource = Resource(resource_type="dataset", title="Direct\u0002ly\u0000", owner_id=ana.id,
                        abstract="a\u001fb", blob={"k\u0001": ["v\u0000"]})
    db.add(resource)
    db.commit()
    db.expire_all()
    stored = db.get(Resource, resource.id)
    assert (stored.title, stored.abstract) == ("Directly", "ab")
    assert stored.blob == {"k": ["v"]}
