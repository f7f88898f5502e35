"""bench.geodata.gen_vectors: synthetic points and polygons for the geodata benchmarks.

Writes ``points.<ext>`` (N points: id, name, value, category, count) and ``polygons.<ext>``
(M star-shaped polygons of 4-8 vertices, 0.01-0.06 degrees across: id, name, area_class, value)
in EPSG:4326, for each requested format. Both cover lon 0..40, lat 30..60, so the WMS views
(square, centred on 20E 45N) cut the same density of features out of either layer.

Rows are built column-wise (numpy + shapely, one Arrow table) and written with pyogrio's Arrow
writer, so 1,000,000 points take seconds. Features are in random spatial order, as an upload
usually is: the stores must build their own spatial index.

    python bench/geodata/gen_vectors.py /tmp/geobench/data --points 1000000 --polygons 100000
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import shapely
from pyogrio.raw import write_arrow

EXTENT = (0.0, 30.0, 40.0, 60.0)  # lon/lat box holding every generated feature
CATEGORIES = ["alpha", "beta", "gamma", "delta", "epsilon"]
DRIVERS = {"gpkg": "GPKG", "fgb": "FlatGeobuf", "geojson": "GeoJSON"}


def random_positions(rng: np.random.Generator, n: int, margin: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    x0, y0, x1, y1 = EXTENT
    return rng.uniform(x0 + margin, x1 - margin, n), rng.uniform(y0 + margin, y1 - margin, n)


def labels(prefix: str, n: int) -> pa.Array:
    return pa.array(np.char.add(prefix, np.arange(n).astype("U8")).astype(object), pa.string())


def points_table(rng: np.random.Generator, n: int) -> pa.Table:
    x, y = random_positions(rng, n)
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "name": labels("pt-", n),
        "value": pa.array(rng.normal(100.0, 25.0, n)),
        "category": pa.DictionaryArray.from_arrays(rng.integers(0, len(CATEGORIES), n).astype(np.int32),
                                                   CATEGORIES).cast(pa.string()),
        "count": pa.array(rng.integers(0, 10_000, n).astype(np.int32)),
        "geometry": pa.array(shapely.to_wkb(shapely.points(x, y)), pa.binary()),
    })


def star_polygons(rng: np.random.Generator, n: int) -> np.ndarray:
    """Polygons whose vertices go round a centre in angle order with every angular gap under
    half a turn, so the centre sees every edge: always simple, so valid."""
    cx, cy = random_positions(rng, n, margin=0.03)
    vertices = rng.integers(4, 9, n)
    radius = rng.uniform(0.005, 0.03, n)
    geoms = np.empty(n, dtype=object)
    for k in range(4, 9):  # one vectorised batch per vertex count
        idx = np.flatnonzero(vertices == k)
        steps = np.arange(k) + rng.uniform(0.0, 0.8, (idx.size, k))  # gaps of 0.2-1.8 of 1/k turn
        angles = steps * (2 * np.pi / k) + rng.uniform(0.0, 2 * np.pi, (idx.size, 1))
        reach = radius[idx, None] * rng.uniform(0.6, 1.0, (idx.size, k))
        ring = np.stack([cx[idx, None] + reach * np.cos(angles),
                         cy[idx, None] + reach * np.sin(angles)], axis=-1)
        geoms[idx] = shapely.polygons(shapely.linearrings(ring))
    return geoms


def polygons_table(rng: np.random.Generator, n: int) -> pa.Table:
    geoms = star_polygons(rng, n)
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "name": labels("poly-", n),
        "area_class": pa.array(rng.integers(1, 6, n).astype(np.int32)),
        "value": pa.array(rng.uniform(0.0, 1.0, n)),
        "geometry": pa.array(shapely.to_wkb(geoms), pa.binary()),
    })


def write(table: pa.Table, out: Path, stem: str, geometry_type: str, formats: list[str]) -> None:
    for ext in formats:
        path = out / f"{stem}.{ext}"
        path.unlink(missing_ok=True)
        t0 = time.perf_counter()
        write_arrow(table, str(path), layer=stem, driver=DRIVERS[ext], geometry_name="geometry",
                    geometry_type=geometry_type, crs="EPSG:4326")
        print(f"{path}: {table.num_rows:,} features, {path.stat().st_size / 1e6:.0f} MB, "
              f"{time.perf_counter() - t0:.1f} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--points", type=int, default=1_000_000)
    parser.add_argument("--polygons", type=int, default=100_000)
    parser.add_argument("--formats", default="gpkg,fgb", help="comma-separated: gpkg, fgb, geojson")
    parser.add_argument("--seed", type=int, default=20261123)
    args = parser.parse_args()
    formats = args.formats.split(",")
    args.out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    if args.points:
        write(points_table(rng, args.points), args.out, "points", "Point", formats)
    if args.polygons:
        write(polygons_table(rng, args.polygons), args.out, "polygons", "Polygon", formats)


if __name__ == "__main__":
    main()
