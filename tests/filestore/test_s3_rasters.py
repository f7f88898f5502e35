"""Rasters in the object store: a GeoTIFF uploaded to a site whose files live in an S3 bucket
(moto's server as a process) is kept there as its COG, and WMS GetMap, WCS GetCoverage, raster
tiles, the download and the thumbnail all read it from the bucket and answer what the embedded
default (COGs under the data directory) answers for the same upload; another node over the same
catalogue and bucket answers the same; no data directory holds a raster; an outage of the store
during a raster read answers 503 with Retry-After."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import rasterio
from fastapi.testclient import TestClient
from rasterio.io import MemoryFile

from cartotheca.api.app import create_app
from tests.conftest import _clean, basic
from tests.factories import PASSWORD, make_user
from tests.geodata.fixtures import upload_and_wait, write_raster
from tests.support.pixels import pixels
from tests.support.s3 import S3Server, s3_server, store_settings
from tests.support.services import postgres_database

# The same requests against both sites: views in the native CRS and reprojected, whole and
# zoomed in past the native resolution, a tile, coverages whole and cut, the download.
BOUNDS = (0.0, 40.0, 16.0, 52.0)


def get_map(alternate: str, crs: str, bbox: str, width: int = 120, height: int = 90) -> dict[str, str]:
    return {"SERVICE": "WMS", "VERSION": "1.3.0", "REQUEST": "GetMap", "LAYERS": alternate, "STYLES": "",
            "CRS": crs, "BBOX": bbox, "WIDTH": str(width), "HEIGHT": str(height), "FORMAT": "image/png"}


def get_coverage(coverage_id: str, *subsets: str) -> list[tuple[str, str]]:
    return [("SERVICE", "WCS"), ("VERSION", "2.0.1"), ("REQUEST", "GetCoverage"),
            ("COVERAGEID", coverage_id), *(("SUBSET", s) for s in subsets)]


@pytest.fixture(scope="module")
def postgis_url() -> Iterator[str]:
    # Rasters need no vector store; the object store wants the PostGIS backend named, not used.
    with postgres_database("cartotheca_s3_rasters") as url:
        yield url


@pytest.fixture
def site(make_settings, base_app, postgis_url, tmp_path):
    """``site(name, server=None, bucket=None)``: an app over the test database with its own data
    directory; with a server and bucket its files (rasters included) go to the bucket."""
    built = []

    def build(name: str, server: S3Server | None = None, bucket: str | None = None):
        store = store_settings(server, bucket) if server is not None and bucket else {}
        settings = make_settings(DATA_DIR=tmp_path / name, STORAGE_BACKEND="postgis",
                                 DATASTORE_URL=postgis_url, **store)
        app = create_app(settings, migrate=False)
        built.append(app)
        return app

    yield build
    for app in built:
        app.state.cartotheca.engine.dispose()
    _clean(base_app.state.cartotheca.engine)


def publish_raster(client: TestClient, headers: dict[str, str], path: Path) -> dict:
    record = upload_and_wait(client, headers, path)
    assert record["status"] == "finished", record
    pk = record["output_params"]["resources"][0]["id"]
    dataset = client.get(f"/api/v2/datasets/{pk}", headers=headers).json()["dataset"]
    assert dataset["subtype"] == "raster", dataset
    return dataset


def answers(client: TestClient, headers: dict[str, str], dataset: dict) -> dict[str, object]:
    """What the site answers for ``dataset``: decoded images, coverage pixels, the download."""
    alternate, coverage_id = dataset["alternate"], f"{dataset['workspace']}__{dataset['name']}"
    maps = {
        "native": get_map(alternate, "CRS:84", "-2,38,18,54"),
        "zoomed": get_map(alternate, "CRS:84", "3.1,43.2,5.3,44.9", 200, 160),
        "mercator": get_map(alternate, "EPSG:3857", "-300000,4800000,1900000,7000000", 100, 100),
    }
    seen: dict[str, object] = {}
    for name, params in maps.items():
        image = client.get("/ows", params=params, headers=headers)
        assert image.status_code == 200 and image.headers["content-type"] == "image/png", image.text
        seen[f"map {name}"] = pixels(image.content)
    tile = client.get(f"/tiles/{alternate}/4/8/5.png", headers=headers)
    assert tile.status_code == 200 and tile.headers["content-type"] == "image/png", tile.text
    seen["tile"] = pixels(tile.content)
    for name, subsets in {"whole": (), "cut": ("Long(2.5,9.75)", "Lat(44.1,50)")}.items():
        cut = client.get("/ows", params=get_coverage(coverage_id, *subsets), headers=headers)
        assert cut.status_code == 200 and cut.headers["content-type"] == "image/tiff", cut.text
        with MemoryFile(cut.content) as memory, memory.open() as tiff:
            seen[f"coverage {name}"] = (tiff.read(), tuple(tiff.transform))
    download = client.get(f"/datasets/{alternate}/dataset_download", headers=headers)
    assert download.status_code == 200, download.text
    with MemoryFile(download.content) as memory, memory.open() as tiff:
        seen["download"] = (tiff.read(), tuple(tiff.transform), tiff.overviews(1))
    thumbnail = client.get(f"/thumbnails/{dataset['uuid']}.png")
    assert thumbnail.status_code == 200, thumbnail.text
    seen["thumbnail"] = pixels(thumbnail.content)
    return seen


def rasters_on_disk(app) -> list[str]:
    root = Path(app.state.cartotheca.settings.DATA_DIR)
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if p.is_file() and (p.suffix.lower() in (".tif", ".tiff") or "rasters" in p.parts))


def assert_same(expected: dict[str, object], seen: dict[str, object]) -> None:
    assert seen.keys() == expected.keys()
    for name, value in expected.items():
        if isinstance(value, np.ndarray):
            assert np.array_equal(seen[name], value), name
            assert value[..., 3].any(), f"{name}: nothing drawn"  # a blank image proves nothing
        else:
            pixels_expected, *rest_expected = value  # type: ignore[misc]
            pixels_seen, *rest_seen = seen[name]  # type: ignore[misc]
            assert np.array_equal(pixels_seen, pixels_expected), name
            assert rest_seen == rest_expected, name


@pytest.mark.parametrize("size", [(64, 48), (1400, 1050)], ids=["small", "with overviews"])
def test_every_raster_reader_answers_from_the_bucket_as_from_the_data_directory(
        s3, site, db, tmp_path, size):
    width, height = size
    source = write_raster(tmp_path / "source", "elevation", width=width, height=height, bounds=BOUNDS,
                          tiled=True)
    make_user(db, "rita")
    rita = basic("rita", PASSWORD)

    local = site("local")
    with TestClient(local) as client:
        dataset = publish_raster(client, rita, source)
        expected = answers(client, rita, dataset)
        assert client.delete(f"/api/v2/resources/{dataset['pk']}", headers=rita).status_code == 204
    assert rasters_on_disk(local) == []  # the deletion took the local COG

    bucket = s3.new_bucket()
    remote = site("remote", s3, bucket)
    with TestClient(remote) as client:
        dataset = publish_raster(client, rita, source)
        stored = [key for key in s3.keys(bucket) if key.startswith("site/rasters/")]
        assert len(stored) == 1 and stored[0].endswith(".tif"), stored
        seen = answers(client, rita, dataset)
        assert rasters_on_disk(remote) == []
        assert_same(expected, seen)
        assert client.delete(f"/api/v2/resources/{dataset['pk']}", headers=rita).status_code == 204
        assert not [key for key in s3.keys(bucket) if key.startswith("site/rasters/")]


def test_a_raster_uploaded_through_one_node_is_read_by_another(s3, site, db, tmp_path):
    """Two nodes over one catalogue and one bucket, each with a data directory of its own."""
    source = write_raster(tmp_path / "source", "bathymetry", width=1400, height=1050, bounds=BOUNDS,
                          tiled=True)
    make_user(db, "rita")
    rita = basic("rita", PASSWORD)
    bucket = s3.new_bucket()
    node_a, node_b = site("node-a", s3, bucket), site("node-b", s3, bucket)
    with TestClient(node_a) as a, TestClient(node_b) as b:
        dataset = publish_raster(a, rita, source)
        seen_by_b = answers(b, rita, dataset)
        assert_same(answers(a, rita, dataset), seen_by_b)
        assert rasters_on_disk(node_a) == [] and rasters_on_disk(node_b) == []
        # a deletion through B removes the object A uploaded
        assert b.delete(f"/api/v2/resources/{dataset['pk']}", headers=rita).status_code == 204
        assert not [key for key in s3.keys(bucket) if key.startswith("site/rasters/")]
        gone = a.get(f"/datasets/{dataset['alternate']}/dataset_download", headers=rita)
        assert gone.status_code == 404, gone.text


def test_a_store_outage_during_raster_reads_answers_503(site, db, tmp_path):
    source = write_raster(tmp_path / "source", "slope", bounds=BOUNDS)
    make_user(db, "rita")
    rita = basic("rita", PASSWORD)
    with s3_server(tmp_path / "moto.log") as server:
        bucket = server.new_bucket()
        app = site("remote", server, bucket)
        with TestClient(app) as client:
            dataset = publish_raster(client, rita, source)
            alternate = dataset["alternate"]
            coverage_id = f"{dataset['workspace']}__{dataset['name']}"
            reads = {
                "map": ("/ows", get_map(alternate, "CRS:84", "-2,38,18,54")),
                "tile": (f"/tiles/{alternate}/4/8/5.png", None),
                "coverage": ("/ows", get_coverage(coverage_id)),
                "download": (f"/datasets/{alternate}/dataset_download", None),
                "feature info": ("/ows", {**get_map(alternate, "CRS:84", "-2,38,18,54"),
                                          "REQUEST": "GetFeatureInfo", "QUERY_LAYERS": alternate,
                                          "INFO_FORMAT": "application/json", "I": "60", "J": "45"}),
            }
            before = {name: client.get(path, params=params, headers=rita)
                      for name, (path, params) in reads.items()}
            assert {name: r.status_code for name, r in before.items()} == dict.fromkeys(reads, 200)
            saved = {key: server.client().get_object(Bucket=bucket, Key=key)["Body"].read()
                     for key in server.keys(bucket)}
            server.stop()
            for name, (path, params) in reads.items():
                down = client.get(path, params=params, headers=rita)
                assert down.status_code == 503, (name, down.text)
                assert int(down.headers["retry-after"]) > 0, name
            server.start()
            server.client().create_bucket(Bucket=bucket)
            for key, data in saved.items():
                server.client().put_object(Bucket=bucket, Key=key, Body=data)
            for name, (path, params) in reads.items():
                back = client.get(path, params=params, headers=rita)
                assert back.status_code == 200, (name, back.text)
                if name == "feature info":  # the answer's time stamp differs
                    assert back.json()["features"] == before[name].json()["features"] != []
                else:
                    assert back.content == before[name].content, name


def test_the_stored_object_is_a_cog_the_bucket_serves(s3, site, db, tmp_path):
    """The object GDAL reads in place is the tiled, compressed COG with the source's pixels."""
    source = write_raster(tmp_path / "source", "depth", width=1400, height=1050, bounds=BOUNDS)
    make_user(db, "rita")
    bucket = s3.new_bucket()
    app = site("remote", s3, bucket)
    with TestClient(app) as client:
        dataset = publish_raster(client, basic("rita", PASSWORD), source)
    [key] = [key for key in s3.keys(bucket) if key.startswith(f"site/rasters/{dataset['name']}")]
    data = s3.client().get_object(Bucket=bucket, Key=key)["Body"].read()
    with MemoryFile(data) as memory, memory.open() as cog, rasterio.open(source) as original:
        assert cog.block_shapes == [(512, 512)] and cog.compression.name == "deflate"
        assert cog.overviews(1) == [2, 4]
        assert np.array_equal(cog.read(), original.read())
