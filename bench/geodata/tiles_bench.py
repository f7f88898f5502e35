"""bench.geodata.tiles_bench: COG tiles over HTTP against rio-tiler called directly.

The raster from gen_raster.py is published through the real ingest (a COG in the raster store),
then, in ONE run:

- Cartotheca: ``GET /tiles/{alternate}/{z}/{x}/{y}.png`` from ``cartotheca serve`` (uvicorn, one
  worker) over a keep-alive loopback connection;
- rio-tiler directly, in this process, on the very COG file the server reads:
  ``Reader(cog).tile(x, y, z)`` then ``ImageData.render(img_format="PNG")``, with the
  dataset opened once (the floor), and also opened per tile (what a server that keeps no
  dataset handles pays).

Per zoom, a set of distinct tiles inside the raster; one untimed pass over all of them warms
both processes (GDAL block caches, the server's dataset lookup), then every round asks each tile
from each side in turn, alternating which goes first.

    python bench/geodata/tiles_bench.py --raster /tmp/geobench/data/raster.tif --work /tmp/geobench/tiles
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import (  # noqa: E402  (bench/geodata is a folder of scripts)
    HERE,
    HTTPClient,
    Server,
    figures,
    free_port,
    load_average,
    log,
    png_coverage,
    server_env,
    write_json,
)

OVERHEAD = "cartotheca, blank tile outside the data"
SIDES = ("cartotheca", "rio-tiler (open once)", "rio-tiler (open per tile)", OVERHEAD)


def publish(raster: Path, data_dir: Path, database_url: str) -> dict:
    cmd = [sys.executable, str(HERE / "ingest_worker.py"), "publish", str(raster), str(data_dir),
           database_url, "geopackage"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"publishing {raster} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def tile_set(cog: Path, zooms: list[int], per_zoom: int) -> dict[int, list]:
    import morecantile
    from rio_tiler.io import Reader

    tms = morecantile.tms.get("WebMercatorQuad")
    with Reader(str(cog)) as src:
        w, s, e, n = src.get_geographic_bounds("EPSG:4326")
    out = {}
    for z in zooms:
        # Tiles over the raster (edge tiles included, as a map shows them), spread evenly.
        over = list(tms.tiles(w + 0.5, s + 0.5, e - 0.5, n - 0.5, zooms=[z]))
        step = max(1, len(over) // per_zoom)
        out[z] = over[::step][:per_zoom]
    return out


class Direct:
    """rio-tiler in this process: tile() and PNG encoding, with the COG opened once or per call."""

    def __init__(self, cog: Path):
        from rio_tiler.io import Reader

        self.Reader = Reader
        self.cog = str(cog)
        self.src = Reader(self.cog)

    def once(self, t) -> bytes:
        return self.src.tile(t.x, t.y, t.z).render(img_format="PNG")

    def per_tile(self, t) -> bytes:
        with self.Reader(self.cog) as src:
            return src.tile(t.x, t.y, t.z).render(img_format="PNG")

    def close(self) -> None:
        self.src.close()


def measure(client: HTTPClient | None, direct: Direct, alternate: str, tiles: dict[int, list],
            rounds: int) -> dict:
    def http(t) -> bytes:
        status, headers, body = client.get(f"/tiles/{alternate}/{t.z}/{t.x}/{t.y}.png")
        if status != 200 or not headers.get("content-type", "").startswith("image/png"):
            raise SystemExit(f"tile {t}: HTTP {status} {headers.get('content-type')} {body[:300]!r}")
        return body

    def http_outside(t) -> bytes:
        # Same zoom, top-left tile: far from the data, so the route answers with its cached blank
        # PNG. What remains is the request's fixed cost (HTTP, dataset lookup, permission check).
        return http(type(t)(0, 0, t.z))

    sides = {"rio-tiler (open once)": direct.once, "rio-tiler (open per tile)": direct.per_tile}
    if client is not None:
        sides = {"cartotheca": http, **sides, OVERHEAD: http_outside}
    results = {}
    for z, ts in tiles.items():
        samples: dict[str, list[float]] = {name: [] for name in sides}
        sizes: dict[str, list[int]] = {name: [] for name in sides}
        coverage: dict[str, float] = {}
        identical = 0
        for t in ts:  # warm-up pass; also: does the server send the very PNG rio-tiler makes?
            bodies = {name: fetch(t) for name, fetch in sides.items()}
            for name, body in bodies.items():
                coverage.setdefault(name, png_coverage(body)["drawn"])
            identical += len({body for name, body in bodies.items() if name != OVERHEAD}) == 1
        order = list(sides.items())
        for r in range(rounds):
            for i, t in enumerate(ts):
                turn = order if (r + i) % 2 == 0 else order[::-1]
                for name, fetch in turn:
                    t0 = time.perf_counter()
                    body = fetch(t)
                    samples[name].append((time.perf_counter() - t0) * 1000)
                    sizes[name].append(len(body))
        results[z] = {name: {**figures(v), "png_bytes_median": sorted(sizes[name])[len(sizes[name]) // 2],
                             "first_tile_drawn": coverage[name]}
                      for name, v in samples.items()}
        results[z]["identical_png_tiles"] = identical
        line = ", ".join(f"{n}: {f['median']:.1f} ms (min {f['min']:.1f})" for n, f in results[z].items()
                         if isinstance(f, dict))
        log(f"  z{z} ({len(ts)} tiles x {rounds}): {line}; load {load_average()}")
    return results


def table(results: dict) -> str:
    lines = ["| zoom | tiles x rounds | Cartotheca HTTP min / median ms | rio-tiler direct, open once: min / "
             "median ms | ratio (median / min) | rio-tiler, open per tile: min / median ms | PNG bytes "
             "(Cartotheca / rio-tiler) | byte-identical PNGs | Cartotheca, blank tile outside the data: "
             "min / median ms |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for z, r in results["zooms"].items():
        c, d, p, o = (r.get(s) for s in SIDES)
        ratio = f"{c['median'] / d['median']:.2f}× / {c['min'] / d['min']:.2f}×" if c else ""
        cell = f"{c['min']:.1f} / {c['median']:.1f}" if c else "–"
        over = f"{o['min']:.1f} / {o['median']:.1f}" if o else "–"
        lines.append(f"| z{z} | {results['tiles_per_zoom'][z]} x {results['rounds']} | {cell} | "
                     f"{d['min']:.1f} / {d['median']:.1f} | {ratio} | {p['min']:.1f} / {p['median']:.1f} | "
                     f"{c['png_bytes_median'] if c else '–'} / {d['png_bytes_median']} | "
                     f"{r['identical_png_tiles']} of {results['tiles_per_zoom'][z]} | "
                     f"{over} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--raster", type=Path, required=True, help="output of gen_raster.py")
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--zooms", default="5,6,7,9")
    parser.add_argument("--tiles", type=int, default=20, help="distinct tiles per zoom")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--direct-only", action="store_true", help="rio-tiler only (no server)")
    parser.add_argument("--cog", type=Path, default=None, help="with --direct-only: the COG to read")
    parser.add_argument("--out", type=Path, default=Path(__file__).parents[1] / "data" / "geodata-tiles.json")
    args = parser.parse_args()
    from cartotheca.geodata.storage.stores import raster_store
    from cartotheca.settings import Settings

    zooms = [int(z) for z in args.zooms.split(",")]
    results = {"started": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
               "load_before": load_average(), "rounds": args.rounds}
    if args.direct_only:
        cog, alternate = args.cog or args.raster, None
    else:
        data_dir = args.work / "data"
        shutil.rmtree(data_dir, ignore_errors=True)
        database_url = f"sqlite:///{data_dir / 'cartotheca.sqlite3'}"
        published = publish(args.raster, data_dir, database_url)
        cog = Path(raster_store(Settings(DATA_DIR=data_dir)).path(published["stored"]["location"]))
        alternate = published["stored"]["alternate"]
        results["publish_seconds"] = published["seconds"]
        log(f"published {alternate} in {published['seconds']:.1f} s: {cog}")
    tiles = tile_set(cog, zooms, args.tiles)
    results["tiles_per_zoom"] = {z: len(ts) for z, ts in tiles.items()}
    direct = Direct(cog)
    try:
        if args.direct_only:
            results["zooms"] = measure(None, direct, "", tiles, args.rounds)
        else:
            port = free_port()
            with Server(server_env(data_dir, database_url, "geopackage", None, port), port,
                        args.work / "server.log") as server:
                client = HTTPClient(port)
                results["zooms"] = measure(client, direct, alternate, tiles, args.rounds)
                results["server_memory_mib"] = server.memory_mib()
                client.close()
    finally:
        direct.close()
    results["load_after"] = load_average()
    write_json(args.out, results)
    print(table(results))
    print(f"\nload average before/after: {results['load_before']} / {results['load_after']}; "
          f"results in {args.out}")


if __name__ == "__main__":
    main()
