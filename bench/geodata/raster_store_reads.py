"""Raster reads from the object store against the same COG under the data directory.

    python bench/geodata/raster_store_reads.py [--width 4000] [--height 3000] [--repeat 20]

Publishes one generated GeoTIFF (``tests.geodata.fixtures.write_raster``, with overviews once
it is larger than a block) on two in-process sites over SQLite: the embedded default (COGs
under ``RASTER_DIR``) and one whose file store is a bucket on moto's S3 server started as a
process on this machine. Prints the median time of WMS GetMap (whole raster, zoomed in,
reprojected), a raster tile and a WCS cut on each, through the application's request handling
(no network client in between).
"""

from __future__ import annotations

import argparse
import base64
import statistics
import sys
import tempfile
import time
from pathlib import Path

from fastapi.testclient import TestClient

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)]

from cartotheca.api.app import create_app  # noqa: E402
from cartotheca.settings import Settings  # noqa: E402
from tests.geodata.fixtures import upload_and_wait, write_raster  # noqa: E402
from tests.support.s3 import s3_server, store_settings  # noqa: E402

PASSWORD = "bench-password"
AUTH = {"Authorization": "Basic " + base64.b64encode(f"admin:{PASSWORD}".encode()).decode()}


def site(root: Path, name: str, store: dict[str, str]):
    settings = Settings(DATA_DIR=root / name, DATABASE_URL=f"sqlite:///{root / name}.sqlite3",
                        ADMIN_PASSWORD=PASSWORD, SECRET_KEY="bench", SITEURL="http://testserver/",
                        # the object store wants the scale-out vector backend named; rasters do not use it
                        STORAGE_BACKEND="postgis", DATASTORE_URL="postgresql://127.0.0.1/unused", **store)
    return create_app(settings)


def median_ms(client: TestClient, path: str, params, repeat: int) -> float:
    times = []
    for _ in range(repeat + 3):  # the first three warm caches and pools
        start = time.perf_counter()
        response = client.get(path, params=params, headers=AUTH)
        times.append(time.perf_counter() - start)
        assert response.status_code == 200, response.text[:300]
    return statistics.median(times[3:]) * 1000


def run(root: Path, name: str, store: dict[str, str], source: Path, repeat: int) -> None:
    with TestClient(site(root, name, store)) as client:
        record = upload_and_wait(client, AUTH, source)
        assert record["status"] == "finished", record
        pk = record["output_params"]["resources"][0]["id"]
        dataset = client.get(f"/api/v2/datasets/{pk}", headers=AUTH).json()["dataset"]
        alternate = dataset["alternate"]

        def get_map(bbox: str, size: int, crs: str = "CRS:84") -> dict[str, str]:
            return {"SERVICE": "WMS", "VERSION": "1.3.0", "REQUEST": "GetMap", "LAYERS": alternate,
                    "STYLES": "", "CRS": crs, "BBOX": bbox, "WIDTH": str(size), "HEIGHT": str(size),
                    "FORMAT": "image/png"}

        cases = {
            "GetMap whole, 512 px": ("/ows", get_map("0,40,16,56", 512)),
            "GetMap zoomed in, 256 px": ("/ows", get_map("5,45,6,46", 256)),
            "GetMap EPSG:3857, 256 px": ("/ows", get_map("556597,5621521,667916,5780349", 256, "EPSG:3857")),
            "tile z6": (f"/tiles/{alternate}/6/33/22.png", None),
            "WCS GetCoverage 1x1 degree": ("/ows", [
                ("SERVICE", "WCS"), ("VERSION", "2.0.1"), ("REQUEST", "GetCoverage"),
                ("COVERAGEID", f"{dataset['workspace']}__{dataset['name']}"),
                ("SUBSET", "Long(5,6)"), ("SUBSET", "Lat(45,46)")]),
        }
        for case, (path, params) in cases.items():
            print(f"{name:6s} {case:28s} {median_ms(client, path, params, repeat):7.1f} ms", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=4000)
    parser.add_argument("--height", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="raster-store-reads-"))
    source = write_raster(root / "source", "dem", width=args.width, height=args.height,
                          bounds=(0.0, 40.0, 16.0, 52.0), tiled=True)
    with s3_server(root / "moto.log") as server:
        run(root, "local", {}, source, args.repeat)
        run(root, "s3", store_settings(server, server.new_bucket()), source, args.repeat)


if __name__ == "__main__":
    main()
