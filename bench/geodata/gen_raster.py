"""bench.geodata.gen_raster: a synthetic 3-band uint8 GeoTIFF for the tile benchmarks.

EPSG:3857, 1,200 m pixels from x 0 m and y 8,400,000 m (about lon 0..44, lat 30..60 at the
default 4096 x 4096), tiled 512 x 512, DEFLATE. Content is a smooth pattern plus noise, so
tiles compress like imagery rather than like a flat colour. This is a plain GeoTIFF (no
overviews): ingest turns it into the COG that is served.

    python bench/geodata/gen_raster.py /tmp/geobench/data/raster.tif --size 4096
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import rasterio
from rasterio.transform import from_origin
from rasterio.windows import Window

import cartotheca  # noqa: F401  (pins PROJ_DATA before rasterio loads its GDAL)

PIXEL = 1200.0
ORIGIN = (0.0, 8_400_000.0)
STRIP = 512


def strip(rng: np.random.Generator, size: int, row0: int, rows: int) -> np.ndarray:
    cols = np.arange(size, dtype=np.float32)[None, :] / size
    lines = np.arange(row0, row0 + rows, dtype=np.float32)[:, None] / size
    bands = []
    for b in range(3):
        wave = np.sin(cols * (6 + 3 * b) * np.pi) * np.cos(lines * (5 + 2 * b) * np.pi)
        base = (wave + 1.0) * (90 + 10 * b)
        bands.append((base + rng.integers(0, 36, (rows, size))).clip(0, 255).astype(np.uint8))
    return np.stack(bands)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--seed", type=int, default=20261123)
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    profile = dict(driver="GTiff", width=args.size, height=args.size, count=3, dtype="uint8",
                   crs="EPSG:3857", transform=from_origin(*ORIGIN, PIXEL, PIXEL), tiled=True,
                   blockxsize=512, blockysize=512, compress="deflate", interleave="pixel")
    t0 = time.perf_counter()
    with rasterio.open(args.out, "w", **profile) as dst:
        for row0 in range(0, args.size, STRIP):
            rows = min(STRIP, args.size - row0)
            dst.write(strip(rng, args.size, row0, rows), window=Window(0, row0, args.size, rows))
    print(f"{args.out}: {args.size} x {args.size} x 3, {args.out.stat().st_size / 1e6:.0f} MB, "
          f"{time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
