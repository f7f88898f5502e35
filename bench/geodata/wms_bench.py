"""bench.geodata.wms_bench: WMS GetMap latency, Cartotheca against MapServer, on the same data.

Per storage backend, the generated polygons and points are published through the real ingest
with an SLD (solid fill + 1 px outline; points as 6 px circles), then, in ONE run:

- Cartotheca: ``cartotheca serve`` (uvicorn, one worker), ``GET /ows?SERVICE=WMS&REQUEST=GetMap``
  over a keep-alive loopback HTTP connection;
- MapServer 8.0 (Debian): one warm ``mapserv`` process answering FastCGI (fcgi.py), reading the
  very GeoPackage or PostGIS table Cartotheca's store wrote, with the same style (mapserver.py);
- MapServer as CGI (one ``mapserv`` process per request), the deployment GeoNode-era setups
  often had; fewer requests, as each costs a process start.

WMS 1.1.1, EPSG:4326, 256 x 256 PNG on a white background, at the whole extent and at 1/64 and
1/4096 of it, centred on the data. After warm-up requests, each round asks each server in turn
(alternating who goes first); every image's drawn share is compared between the two servers.

    python bench/geodata/wms_bench.py --data /tmp/geobench/data --work /tmp/geobench/wms
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).parent))
from common import (  # noqa: E402  (bench/geodata is a folder of scripts)
    HERE,
    VIEWS,
    HTTPClient,
    Server,
    figures,
    free_port,
    libpq_conninfo,
    load_average,
    log,
    png_coverage,
    server_env,
    sqlalchemy_url,
    throwaway_database,
    view_bbox,
    write_json,
)
from fcgi import FastCGIClient, MapservFastCGI, cgi_params  # noqa: E402
from mapserver import FILL, POINT_SIZE, STROKE, MapLayer, write_config  # noqa: E402

LAYERS = {"polygons": "polygon", "points": "point"}
EMPTY = (-170.0, -80.0, -169.375, -79.375)  # as small as the 1/4096 view, far from the data
SLOW = 2.0  # seconds: a map this slow needs no more warm-up requests
EXTENT = (0.0, 30.0, 40.0, 60.0)


def _hex(c: tuple[int, int, int]) -> str:
    return "#" + "".join(f"{v:02x}" for v in c)


def sld(name: str, kind: str) -> str:
    """The SLD both servers' styles follow (MapServer's is written in mapserver.py)."""
    fill = f'<Fill><CssParameter name="fill">{_hex(FILL)}</CssParameter></Fill>'
    stroke = (f'<Stroke><CssParameter name="stroke">{_hex(STROKE)}</CssParameter>'
              '<CssParameter name="stroke-width">1</CssParameter></Stroke>')
    if kind == "polygon":
        symbolizer = f"<PolygonSymbolizer>{fill}{stroke}</PolygonSymbolizer>"
    else:
        symbolizer = (f"<PointSymbolizer><Graphic><Mark><WellKnownName>circle</WellKnownName>{fill}{stroke}"
                      f"</Mark><Size>{POINT_SIZE}</Size></Graphic></PointSymbolizer>")
    return ('<?xml version="1.0" encoding="UTF-8"?><StyledLayerDescriptor version="1.0.0" '
            'xmlns="http://www.opengis.net/sld" xmlns:ogc="http://www.opengis.net/ogc">'
            f"<NamedLayer><Name>{name}</Name><UserStyle><Name>{name}_bench</Name>"
            f"<FeatureTypeStyle><Rule>{symbolizer}</Rule></FeatureTypeStyle></UserStyle></NamedLayer>"
            "</StyledLayerDescriptor>")


def publish(src: Path, data_dir: Path, database_url: str, storage: str, datastore_url: str | None,
            sld_path: Path) -> dict:
    cmd = [sys.executable, str(HERE / "ingest_worker.py"), "publish", str(src), str(data_dir), database_url,
           storage, datastore_url or "-", str(sld_path)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"publishing {src} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def gpkg_path(data_dir: Path, location: str) -> Path:
    """Where the GeoPackage store keeps a dataset's file (``location`` is relative to its root)."""
    from cartotheca.geodata.storage.stores import vector_store
    from cartotheca.settings import Settings

    store = vector_store(Settings(DATA_DIR=data_dir, STORAGE_BACKEND="geopackage"))
    return Path(store.root) / location


def get_map_query(layer: str, bbox: tuple[float, ...]) -> dict[str, str]:
    return {"SERVICE": "WMS", "VERSION": "1.1.1", "REQUEST": "GetMap", "LAYERS": layer, "STYLES": "",
            "SRS": "EPSG:4326", "BBOX": ",".join(f"{v:.6f}" for v in bbox), "WIDTH": "256",
            "HEIGHT": "256", "FORMAT": "image/png", "TRANSPARENT": "FALSE", "BGCOLOR": "0xFFFFFF"}


class Sides:
    """The three ways of asking for one map; each returns the PNG bytes."""

    def __init__(self, http: HTTPClient, fcgi: FastCGIClient, cgi_env: dict[str, str]):
        self.http, self.fcgi, self.cgi_env = http, fcgi, cgi_env

    def cartotheca(self, alternate: str, bbox) -> bytes:
        status, headers, body = self.http.get("/ows?" + urlencode(get_map_query(alternate, bbox)))
        return _checked("Cartotheca", status, headers.get("content-type", ""), body)

    def mapserver(self, layer: str, bbox) -> bytes:
        query = "map=BENCH&" + urlencode(get_map_query(layer, bbox))
        headers, body, err = self.fcgi.request(cgi_params(query))
        return _checked("MapServer", 200, headers.get("content-type", ""), body + err)

    def mapserver_cgi(self, layer: str, bbox) -> bytes:
        query = "map=BENCH&" + urlencode(get_map_query(layer, bbox))
        done = subprocess.run(["mapserv", "-nh", f"QUERY_STRING={query}"], env=self.cgi_env,
                              capture_output=True)
        return _checked("mapserv CGI", 200 if done.returncode == 0 else 500, "image/png", done.stdout)


def _checked(who: str, status: int, content_type: str, body: bytes) -> bytes:
    if status != 200 or not content_type.startswith("image/png") or not body.startswith(b"\x89PNG"):
        raise SystemExit(f"{who}: HTTP {status} {content_type}: {body[:400]!r}")
    return body


def measure_view(sides: Sides, alternate: str, layer: str, bbox, args, images: Path, tag: str) -> dict:
    calls = {"cartotheca": lambda: sides.cartotheca(alternate, bbox),
             "mapserver_fcgi": lambda: sides.mapserver(layer, bbox)}
    out: dict[str, dict] = {}
    first: dict[str, bytes] = {}
    for name, call in calls.items():
        for i in range(args.warmup):
            t0 = time.perf_counter()
            first[name] = call()
            if i > 0 and time.perf_counter() - t0 > SLOW:
                break  # a multi-second map is warm after one request; spend the time measuring
    samples: dict[str, list[float]] = {name: [] for name in calls}
    deadline = time.monotonic() + args.seconds
    order = list(calls.items())
    i = 0
    while i < args.requests and (time.monotonic() < deadline or i < args.min_requests):
        for name, call in (order if i % 2 == 0 else order[::-1]):
            t0 = time.perf_counter()
            call()
            samples[name].append((time.perf_counter() - t0) * 1000)
        i += 1
    for name, times in samples.items():
        out[name] = {**figures(times), "png_bytes": len(first[name]), **png_coverage(first[name])}
        (images / f"{tag}_{name}.png").write_bytes(first[name])
    if args.cgi_requests:
        png = sides.mapserver_cgi(layer, bbox)  # page cache warm, as for the others
        times: list[float] = []
        deadline = time.monotonic() + args.seconds / 2
        while len(times) < args.cgi_requests and (time.monotonic() < deadline or len(times) < 2):
            t0 = time.perf_counter()
            sides.mapserver_cgi(layer, bbox)
            times.append((time.perf_counter() - t0) * 1000)
        out["mapserver_cgi"] = {**figures(times), "png_bytes": len(png)}
    return out


def prepare(backend: str, args, stack: ExitStack) -> dict:
    """Publish both layers for ``backend``; returns what the servers need."""
    work = args.work / backend
    data_dir = work / "data"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    if backend == "geopackage":
        database_url, datastore_db, datastore_url = f"sqlite:///{data_dir / 'cartotheca.sqlite3'}", None, None
    else:
        catalogue = stack.enter_context(throwaway_database("bench_wms_catalogue", postgis=False))
        database_url = sqlalchemy_url(catalogue)
        datastore_db = stack.enter_context(throwaway_database("bench_wms_datastore"))
        datastore_url = sqlalchemy_url(datastore_db)
    layers, maplayers = {}, []
    for name in args.layers.split(","):
        kind = LAYERS[name]
        sld_path = work / f"{name}.sld"
        sld_path.write_text(sld(name, kind))
        published = publish(args.data / f"{name}.gpkg", data_dir, database_url, backend, datastore_url,
                            sld_path)
        stored = published["stored"]
        log(f"  {backend}: published {stored['alternate']} in {published['seconds']:.1f} s "
            f"-> {stored['location']}")
        layers[name] = stored["alternate"]
        if backend == "geopackage":
            maplayers.append(MapLayer(name, kind, gpkg=gpkg_path(data_dir, stored["location"]),
                                      gpkg_layer=stored["layer"]))
        else:
            maplayers.append(MapLayer(name, kind, pg_conninfo=libpq_conninfo(datastore_db),
                                      pg_table=stored["location"]))
    conf = write_config(work / "mapserver", maplayers, EXTENT)
    return {"work": work, "data_dir": data_dir, "database_url": database_url, "datastore_url": datastore_url,
            "layers": layers, "mapserver_conf": conf}


def run_backend(backend: str, args) -> dict:
    with ExitStack() as stack:
        setup = prepare(backend, args, stack)
        port = free_port()
        server = stack.enter_context(Server(server_env(setup["data_dir"], setup["database_url"], backend,
                                                       setup["datastore_url"], port), port,
                                                setup["work"] / "server.log"))
        ms_env = dict(os.environ, MAPSERVER_CONFIG_FILE=str(setup["mapserver_conf"]))
        mapserv = stack.enter_context(MapservFastCGI(setup["work"] / "mapserv.sock", ms_env))
        http, fcgi = HTTPClient(port), FastCGIClient(str(mapserv.socket_path))
        stack.callback(http.close)
        stack.callback(fcgi.close)
        sides = Sides(http, fcgi, ms_env)
        images = setup["work"] / "images"
        images.mkdir()
        out: dict[str, dict] = {}
        for layer, alternate in setup["layers"].items():
            views = {view: view_bbox(divisor) for view, divisor in VIEWS.items()}
            # A 1/4096 view far from the data: nothing to draw, so what is left is each
            # server's fixed cost per request (parsing, layer lookup, style, PNG encoding).
            views["empty 1/4096"] = EMPTY
            for view, bbox in views.items():
                tag = f"{layer}_{view.replace('/', '_').replace(' ', '_')}"
                result = measure_view(sides, alternate, layer, bbox, args, images, tag)
                out[f"{layer} {view}"] = result
                c, m = result["cartotheca"], result["mapserver_fcgi"]
                log(f"  {backend} {layer} {view}: Cartotheca {c['median']:.1f} ms (min {c['min']:.1f}), "
                    f"MapServer {m['median']:.1f} ms (min {m['min']:.1f}), drawn {c['drawn']:.1%} vs "
                    f"{m['drawn']:.1%}, ink {c['ink']:.3f} vs {m['ink']:.3f}; load {load_average()}")
        return {"views": out, "server_memory_mib": server.memory_mib(), "images": str(images)}


def table(results: dict) -> str:
    lines = ["| backend | layer, view | Cartotheca min / median ms | MapServer FastCGI min / median ms | "
             "ratio median (min) | mapserv CGI min / median ms | drawn: Cartotheca / MapServer | "
             "ink: Cartotheca / MapServer | n |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for backend, r in results["backends"].items():
        for key, v in r["views"].items():
            c, m, g = v["cartotheca"], v["mapserver_fcgi"], v.get("mapserver_cgi")
            cgi = f"{g['min']:.0f} / {g['median']:.0f}" if g else "–"
            ratio = f"{c['median'] / m['median']:.2f}× ({c['min'] / m['min']:.2f}×)"
            lines.append(f"| {backend} | {key} | {c['min']:.1f} / {c['median']:.1f} | {m['min']:.1f} / "
                         f"{m['median']:.1f} | {ratio} | {cgi} | {c['drawn']:.1%} / {m['drawn']:.1%} | "
                         f"{c['ink']:.3f} / {m['ink']:.3f} | {c['n']} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="output of gen_vectors.py")
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--backends", default="geopackage,postgis")
    parser.add_argument("--layers", default="polygons,points")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--requests", type=int, default=50, help="rounds per view at most")
    parser.add_argument("--min-requests", type=int, default=5, help="rounds per view at least")
    parser.add_argument("--seconds", type=float, default=30.0, help="time cap per view")
    parser.add_argument("--cgi-requests", type=int, default=5, help="mapserv CGI requests per view (0: skip)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parents[1] / "data" / "geodata-wms.json")
    args = parser.parse_args()
    results = {"started": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
               "load_before": load_average(), "backends": {}}
    for backend in args.backends.split(","):
        results["backends"][backend] = run_backend(backend, args)
        write_json(args.out, results)
    results["load_after"] = load_average()
    write_json(args.out, results)
    print(table(results))
    print(f"\nload average before/after: {results['load_before']} / {results['load_after']}; "
          f"results in {args.out}")


if __name__ == "__main__":
    main()
