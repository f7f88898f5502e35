"""bench.geodata.storage_write: GeoPackageStore.write against a plain pyogrio Arrow copy.

The baseline is the anchor copy (``read_arrow`` then ``write_arrow`` to GPKG with the default
R-tree, shared/anchors/geodata/arrow_copy.py); the store streams ``open_arrow`` batches into
``write_arrow`` with its per-batch geometry-type check. Runs alternate, in one process, and the
ratio of medians is printed (target: the store at ≥ 80% of the baseline's features/s).
Optionally also times PostGISStore.write into a throwaway database.

    python bench/geodata/gen_vectors.py /tmp/geobench/data --points 1000000 --polygons 100000
    python bench/geodata/storage_write.py /tmp/geobench/data/points.gpkg /tmp/geobench/data/polygons.gpkg -n 3
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import cartotheca  # noqa: F401  (pins PROJ_DATA)
from cartotheca.geodata.storage import SourceLayer
from cartotheca.geodata.storage.geopackage import GeoPackageStore


def plain_copy(source: str, target: Path) -> int:
    from pyogrio.raw import read_arrow, write_arrow

    meta, table = read_arrow(source)
    write_arrow(table, str(target), driver="GPKG", layer=target.stem,
                geometry_name=meta["geometry_name"] or "wkb_geometry",
                geometry_type=meta["geometry_type"], crs=meta["crs"])
    return table.num_rows


def store_copy(source: str, root: Path, name: str) -> int:
    return GeoPackageStore(root).write(SourceLayer(path=source), name).feature_count


def postgis_copy(source: str, url: str, name: str) -> int:
    from cartotheca.geodata.storage.postgis import PostGISStore

    return PostGISStore(url).write(SourceLayer(path=source), name).feature_count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sources", nargs="+")
    parser.add_argument("-n", "--runs", type=int, default=3)
    parser.add_argument("--postgis", help="SQLAlchemy URL of a PostGIS database to load into too")
    args = parser.parse_args()
    for source in args.sources:
        timings: dict[str, list[float]] = {"plain": [], "store": [], "postgis": []}
        count = 0
        for run in range(args.runs):
            work = Path(tempfile.mkdtemp(prefix="storage-bench-"))
            try:
                started = time.perf_counter()
                count = plain_copy(source, work / "plain.gpkg")
                timings["plain"].append(time.perf_counter() - started)
                started = time.perf_counter()
                store_copy(source, work / "store", f"bench_{run}")
                timings["store"].append(time.perf_counter() - started)
                if args.postgis:
                    started = time.perf_counter()
                    postgis_copy(source, args.postgis, f"bench_{run}_{int(time.time())}")
                    timings["postgis"].append(time.perf_counter() - started)
            finally:
                shutil.rmtree(work, ignore_errors=True)
        print(f"{source}: {count:,} features")
        for label, values in timings.items():
            if values:
                median = statistics.median(values)
                print(f"  {label:8s} min {min(values):6.2f}s  median {median:6.2f}s  "
                      f"{count / median:10,.0f} features/s")
        ratio = statistics.median(timings["plain"]) / statistics.median(timings["store"])
        print(f"  store throughput = {ratio:.0%} of the plain Arrow copy (median)")


if __name__ == "__main__":
    main()
