"""The cluster behind nginx: a zipped shapefile uploaded through the balancer is staged in the
object store (no folder is shared) and imported by the Celery worker into PostGIS, and then each
node, asked directly, serves it in every service (WMS, WFS, vector tiles, CSW, the catalogue
page) without a copy of the data in its own data folder; a PDF document uploaded through the
balancer is downloaded from each node, whole and by byte range; a GeoTIFF is imported into the object
store as its COG, and each node draws, cuts, tiles and serves it from there, the same bytes, with
no copy on any machine's disk.
nginx forwards the public address, spreads requests over both nodes and, when one node is
stopped, answers every idempotent request from the other; both nodes report to monitoring."""

from __future__ import annotations

import time
import zipfile

import httpx
import pytest
from lxml import etree

from tests.api.routes.document_samples import pdf_bytes
from tests.geodata import fixtures as fx
from tests.support.cluster_data import upload
from tests.support.pixels import pixels

# Every cluster test runs in the one xdist worker that runs the cluster (conftest.py).
pytestmark = [pytest.mark.cluster, pytest.mark.xdist_group("cluster")]


@pytest.fixture(scope="module")
def roads(cluster, through_nginx, tmp_path_factory) -> dict:
    """A zipped shapefile of POINT_COUNT points, uploaded through nginx."""
    folder = tmp_path_factory.mktemp("roads")
    shp = fx.write_points(folder / "src", "roads", driver="ESRI Shapefile")
    archive = folder / "roads.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for part in shp.parent.iterdir():
            zf.write(part, f"roads/{part.name}")
    record = upload(through_nginx, archive)
    pk = record["output_params"]["resources"][0]["id"]
    return through_nginx.get(f"api/v2/datasets/{pk}").json()["dataset"]


@pytest.fixture(scope="module")
def elevation(cluster, through_nginx, tmp_path_factory) -> dict:
    """A GeoTIFF with overviews once stored, uploaded through nginx."""
    source = fx.write_raster(tmp_path_factory.mktemp("elevation"), "elevation", width=1400, height=1050,
                             bounds=(0.0, 40.0, 16.0, 52.0), tiled=True)
    record = upload(through_nginx, source)
    pk = record["output_params"]["resources"][0]["id"]
    return through_nginx.get(f"api/v2/datasets/{pk}").json()["dataset"]


def raster_reads(base: str, dataset: dict) -> dict[str, bytes]:
    alternate = dataset["alternate"]
    with httpx.Client(base_url=base, timeout=60) as client:
        answers = {
            "map": client.get("ows", params={
                "SERVICE": "WMS", "VERSION": "1.3.0", "REQUEST": "GetMap", "LAYERS": alternate, "STYLES": "",
                "CRS": "CRS:84", "BBOX": "-2,38,18,54", "WIDTH": "200", "HEIGHT": "160",
                "FORMAT": "image/png"}),
            "coverage": client.get("ows", params=[
                ("SERVICE", "WCS"), ("VERSION", "2.0.1"), ("REQUEST", "GetCoverage"),
                ("COVERAGEID", f"{dataset['workspace']}__{dataset['name']}"), ("SUBSET", "Long(2,5)"),
                ("SUBSET", "Lat(44,47)")]),
            "tile": client.get(f"tiles/{alternate}/4/8/5.png"),
            "download": client.get(f"datasets/{alternate}/dataset_download"),
            "thumbnail": client.get(f"thumbnails/{dataset['uuid']}.png"),
        }
    for name, response in answers.items():
        assert response.status_code == 200, (name, response.text[:500])
    return {name: response.content for name, response in answers.items()}


def test_each_node_reads_the_raster_from_the_object_store(cluster, object_store, elevation):
    server, bucket = object_store
    stored = [key for key in server.keys(bucket) if key.startswith("site/rasters/")]
    assert len(stored) == 1 and stored[0].endswith(".tif"), server.keys(bucket)
    a, b = raster_reads(cluster.a.url, elevation), raster_reads(cluster.b.url, elevation)
    assert a == b
    assert pixels(a["map"])[..., 3].any() and pixels(a["tile"])[..., 3].any()  # something drawn


@pytest.mark.parametrize("node", ["a", "b"])
def test_every_service_of_each_node_serves_what_the_worker_imported(cluster, roads, node):
    base, alternate = cluster.nodes[node].url, roads["alternate"]
    with httpx.Client(base_url=base, timeout=60) as client:
        image = client.get("ows", params={
            "SERVICE": "WMS", "VERSION": "1.3.0", "REQUEST": "GetMap", "LAYERS": alternate, "STYLES": "",
            "CRS": "CRS:84", "BBOX": "-180,-90,180,90", "WIDTH": "64", "HEIGHT": "32",
            "FORMAT": "image/png"})
        assert image.status_code == 200 and image.headers["content-type"] == "image/png", image.text
        features = client.get("ows", params={
            "SERVICE": "WFS", "VERSION": "2.0.0", "REQUEST": "GetFeature", "TYPENAMES": alternate,
            "OUTPUTFORMAT": "application/json"})
        assert features.status_code == 200, features.text
        assert len(features.json()["features"]) == fx.POINT_COUNT
        tile = client.get(f"tiles/{alternate}/0/0/0.pbf")
        assert tile.status_code == 200 and len(tile.content) > 0, tile.text
        records = client.get("catalogue/csw", params={
            "service": "CSW", "version": "2.0.2", "request": "GetRecords", "typenames": "csw:Record",
            "resulttype": "results", "elementsetname": "brief"})
        assert records.status_code == 200, records.text
        titles = [t.text for t in etree.fromstring(records.content).iter("{http://purl.org/dc/elements/1.1/}title")]
        assert roads["title"] in titles
        page = client.get("catalogue/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        download = client.get(f"datasets/{alternate}/dataset_download")
        assert download.status_code == 200 and len(download.content) > 0, download.text[:300]
        thumbnail = client.get(f"thumbnails/{roads['uuid']}.png")
        assert thumbnail.status_code == 200 and thumbnail.content.startswith(b"\x89PNG")


PDF = pdf_bytes()


@pytest.fixture(scope="module")
def report(through_nginx) -> dict:
    """A PDF document uploaded through nginx."""
    answer = through_nginx.post("api/v2/documents",
                                files={"doc_file": ("report.pdf", PDF, "application/pdf")})
    assert answer.status_code == 200, answer.text
    return answer.json()["document"]


@pytest.mark.parametrize("node", ["a", "b"])
def test_each_node_serves_the_document_whole_and_by_range(cluster, object_store, report, node):
    server, bucket = object_store
    assert f"site/documents/{report['uuid']}/report.pdf" in server.keys(bucket)
    with httpx.Client(base_url=cluster.nodes[node].url, timeout=60) as client:
        whole = client.get(f"documents/{report['pk']}/download")
        assert whole.status_code == 200 and whole.content == PDF, whole.text[:300]
        part = client.get(f"documents/{report['pk']}/download", headers={"Range": "bytes=5-14"})
        assert part.status_code == 206 and part.content == PDF[5:15]
        assert part.headers["content-range"] == f"bytes 5-14/{len(PDF)}"
        thumbnail = client.get(f"thumbnails/{report['uuid']}.png")
        assert thumbnail.status_code == 200 and thumbnail.content.startswith(b"\x89PNG")


def test_no_node_keeps_the_data_in_its_own_folder(cluster, object_store, roads, elevation, report):
    # The worker copied each staged upload and converted the raster on its own disk, then
    # uploaded the COG: no copy stays there either.
    for name in ("a", "b", "worker"):
        kept = sorted(str(p.relative_to(cluster.data_dirs[name]))
                      for p in cluster.data_dirs[name].rglob("*") if p.is_file())
        assert kept == [], f"{name} keeps {kept}"
    # Both uploads were staged in the bucket, through no shared folder, and removed after import.
    server, bucket = object_store
    assert cluster.upload_dir is None
    assert [key for key in server.keys(bucket) if key.startswith("site/uploads/")] == []


def test_nginx_forwards_the_public_address_and_uses_both_nodes(cluster, through_nginx, roads):
    for _ in range(4):
        detail = through_nginx.get(f"api/v2/resources/{roads['pk']}")
        assert detail.status_code == 200
        assert detail.json()["resource"]["link"].startswith(cluster.url)
    served_by = {line.split()[-2] for line in cluster.upstream_log() if "/api/v2/resources/" in line}
    assert served_by == {cluster.a.url[7:-1], cluster.b.url[7:-1]}


def test_a_stopped_node_fails_no_idempotent_request(cluster, roads, admin):
    cluster.b.stop()
    try:
        statuses = []
        with httpx.Client(base_url=cluster.url, timeout=60) as client:
            for _ in range(20):
                statuses.append(client.get(f"api/v2/resources/{roads['pk']}").status_code)
                statuses.append(client.get(f"tiles/{roads['alternate']}/0/0/0.pbf").status_code)
        assert statuses == [200] * 40
    finally:
        cluster.b.start()
        cluster.b.wait_answering()
    # Both nodes report to monitoring under their own host names.
    deadline = time.monotonic() + 60
    names: set[str] = set()
    while time.monotonic() < deadline and not {"node-a", "node-b"} <= names:
        response = httpx.get(f"{cluster.url}monitoring/api/hosts/", headers=admin, timeout=60)
        assert response.status_code == 200, response.text
        names = {host["name"] for host in response.json()["hosts"]}
        time.sleep(0.5)
    assert {"node-a", "node-b"} <= names
