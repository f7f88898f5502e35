"""bench.geodata.caps_bench: WMS and WFS GetCapabilities with 1,000 datasets.

One small dataset (10 polygons) is published through the real ingest; its catalogue rows are
then cloned N-1 times in bulk with ``INSERT ... SELECT`` (the resource, the dataset, and every
row that belongs to them through an ON DELETE CASCADE key: attributes, style, permissions,
contact roles, keywords ...), each clone with its own name, title and uuid and its own copy
of the store (a GeoPackage file, or a PostGIS table). So every layer is real and servable, and
the capabilities documents list N layers built from stored metadata.

In ONE run, for each request: ``cartotheca serve`` over HTTP, and as a reference MapServer 8
(warm FastCGI ``mapserv``) with a mapfile of the same N layers, each with its extent and SRS
in metadata so that MapServer scans no data either.

    python bench/geodata/caps_bench.py --work /tmp/geobench/caps -n 1000
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import sys
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import urlencode

import numpy as np
import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).parent))
from common import (  # noqa: E402  (bench/geodata is a folder of scripts)
    HTTPClient,
    Server,
    figures,
    free_port,
    libpq_conninfo,
    load_average,
    log,
    psql,
    server_env,
    sqlalchemy_url,
    throwaway_database,
    write_json,
)
from fcgi import FastCGIClient, MapservFastCGI, cgi_params  # noqa: E402
from gen_vectors import polygons_table  # noqa: E402
from mapserver import MapLayer, write_config  # noqa: E402
from wms_bench import EXTENT, publish, sld  # noqa: E402

REQUESTS = {
    "WMS 1.3.0": {"SERVICE": "WMS", "VERSION": "1.3.0", "REQUEST": "GetCapabilities"},
    "WMS 1.1.1": {"SERVICE": "WMS", "VERSION": "1.1.1", "REQUEST": "GetCapabilities"},
    "WFS 2.0.0": {"SERVICE": "WFS", "VERSION": "2.0.0", "REQUEST": "GetCapabilities"},
    "WFS 1.1.0": {"SERVICE": "WFS", "VERSION": "1.1.0", "REQUEST": "GetCapabilities"},
}
# Per table, the columns a clone must not share with its template (unique or telling).
OVERRIDES = {
    "resources": ("uuid", "title", "name", "alternate"),
    "datasets": ("name", "store", "location"),
    "styles": ("name", "sld_title"),
}


def write_template(path: Path, count: int = 10) -> Path:
    from pyogrio.raw import write_arrow

    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    write_arrow(polygons_table(np.random.default_rng(7), count), str(path), layer=path.stem, driver="GPKG",
                geometry_name="geometry", geometry_type="Polygon", crs="EPSG:4326")
    return path


def owned_tables(metadata: sa.MetaData) -> list[tuple[sa.Table, sa.Column, str]]:
    """(table, key column, parent) for every table whose rows belong to a resource or a
    dataset (a foreign key with ON DELETE CASCADE), parents before children."""
    out = []
    for parent, key in (("resources", "id"), ("datasets", "resource_id")):
        for table in metadata.sorted_tables:
            for fk in table.foreign_keys:
                if (fk.column.table.name, fk.column.name) == (parent, key) and fk.ondelete == "CASCADE":
                    out.append((table, fk.parent, parent))
    return out


def clone_rows(engine: sa.Engine, template_id: int, clones: list[dict]) -> None:
    """Copy the template's rows once per clone with ``INSERT ... SELECT`` (type-agnostic: the
    database copies geometry columns itself)."""
    from cartotheca.db.base import Base

    metadata = Base.metadata
    resources = metadata.tables["resources"]
    with engine.begin() as conn:
        start = conn.scalar(sa.select(sa.func.max(resources.c.id))) + 1
        for i, clone in enumerate(clones):
            clone["id"] = start + i
        _insert_select(conn, resources, resources.c.id, template_id, clones, "resources", explicit_id=True)
        for table, key, _parent in owned_tables(metadata):
            if table.name == "resources":
                continue
            _insert_select(conn, table, key, template_id, clones, table.name, explicit_id=False)
        if conn.dialect.name == "postgresql":
            conn.execute(sa.text("SELECT setval(pg_get_serial_sequence('resources', 'id'), "
                                 "(SELECT max(id) FROM resources))"))


def _insert_select(conn, table: sa.Table, key: sa.Column, template_id: int, clones: list[dict], name: str,
                   explicit_id: bool) -> None:
    overrides = OVERRIDES.get(name, ())
    targets, sources = [], []
    for column in table.columns:
        if column.primary_key and column.autoincrement is not False and column is not key and \
                len(table.primary_key.columns) == 1 and not explicit_id:
            continue  # a fresh serial id
        targets.append(f'"{column.name}"')
        if column is key or (explicit_id and column.name == "id"):
            sources.append(":new_id")
        elif column.name in overrides:
            sources.append(f":{column.name}")
        else:
            sources.append(f'"{column.name}"')
    sql = sa.text(f'INSERT INTO "{table.name}" ({", ".join(targets)}) SELECT {", ".join(sources)} '
                  f'FROM "{table.name}" WHERE "{key.name}" = :template_id')
    params = [{"new_id": c["id"], "template_id": template_id,
               **{col: c[name][col] for col in overrides}} for c in clones]
    conn.execute(sql, params)


def prepare(backend: str, args, stack: ExitStack) -> dict:
    work = args.work / backend
    shutil.rmtree(work, ignore_errors=True)
    data_dir = work / "data"
    template = write_template(work / "source" / "caps.gpkg")
    if backend == "geopackage":
        database_url, datastore_db = f"sqlite:///{data_dir / 'cartotheca.sqlite3'}", None
        datastore_url = None
    else:
        database_url = sqlalchemy_url(stack.enter_context(throwaway_database("bench_caps_catalogue",
                                                                            postgis=False)))
        datastore_db = stack.enter_context(throwaway_database("bench_caps_datastore"))
        datastore_url = sqlalchemy_url(datastore_db)
    sld_path = work / "caps.sld"
    sld_path.write_text(sld("caps", "polygon"))
    published = publish(template, data_dir, database_url, backend, datastore_url, sld_path)
    stored = published["stored"]
    log(f"  {backend}: template {stored['alternate']} published in {published['seconds']:.2f} s")

    from cartotheca.db.models import Dataset, Resource

    engine = sa.create_engine(database_url)
    with engine.connect() as conn:
        res = conn.execute(sa.select(Resource.__table__)
                           .where(Resource.alternate == stored["alternate"])).one()
        ds = conn.execute(sa.select(Dataset.__table__).where(Dataset.resource_id == res.id)).one()
    t0 = time.perf_counter()
    clones, maplayers, statements = [], [], []
    for i in range(1, args.n):
        name = f"{ds.name}_{i:04d}"
        clone = {"resources": {"uuid": str(uuid.uuid4()), "title": f"{res.title} {i:04d}", "name": name,
                               "alternate": f"{ds.workspace}:{name}"},
                 "datasets": {"name": name, "store": name},
                 "styles": {"name": name, "sld_title": f"{res.title} {i:04d}"}}
        clone["datasets"]["location"] = copy_store(backend, data_dir, statements, ds.location, name)
        clones.append(clone)
        maplayers.append(map_layer(backend, data_dir, datastore_db, clone["datasets"]["location"], name,
                                   ds.layer))
    if statements:  # one psql session for all the table copies
        psql("BEGIN; " + "; ".join(statements) + "; COMMIT", datastore_db)
    t1 = time.perf_counter()
    clone_rows(engine, res.id, clones)
    t2 = time.perf_counter()
    with engine.connect() as conn:
        count = conn.scalar(sa.select(sa.func.count()).select_from(Dataset.__table__))
    engine.dispose()
    log(f"  {backend}: {count} datasets; stores copied in {t1 - t0:.1f} s, rows cloned in {t2 - t1:.1f} s")
    maplayers.insert(0, map_layer(backend, data_dir, datastore_db, ds.location, ds.name, ds.layer))
    conf = write_config(work / "mapserver", maplayers, EXTENT)
    return {"work": work, "data_dir": data_dir, "database_url": database_url, "datastore_url": datastore_url,
            "count": count, "mapserver_conf": conf, "setup_seconds": {"stores": t1 - t0, "rows": t2 - t1}}


def copy_store(backend: str, data_dir: Path, statements: list[str], location: str, name: str) -> str:
    """A copy of the template's stored data for one clone: a file, or a table (its SQL is
    appended to ``statements``, run together afterwards)."""
    if backend == "geopackage":
        root = data_dir / "vector"
        shutil.copyfile(root / location, root / f"{name}.gpkg")
        return f"{name}.gpkg"
    schema, _, table = location.rpartition(".")
    schema = schema or "public"
    statements.append(f'CREATE TABLE "{schema}"."{name}" (LIKE "{schema}"."{table}" INCLUDING ALL)')
    statements.append(f'INSERT INTO "{schema}"."{name}" SELECT * FROM "{schema}"."{table}"')
    return f"{schema}.{name}"


def map_layer(backend: str, data_dir: Path, datastore_db: str | None, location: str, name: str,
              layer: str) -> MapLayer:
    if backend == "geopackage":
        return MapLayer(name, "polygon", gpkg=data_dir / "vector" / location, gpkg_layer=layer)
    return MapLayer(name, "polygon", pg_conninfo=libpq_conninfo(datastore_db), pg_table=location)


def run_backend(backend: str, args) -> dict:
    with ExitStack() as stack:
        setup = prepare(backend, args, stack)
        port = free_port()
        server = stack.enter_context(Server(server_env(setup["data_dir"], setup["database_url"], backend,
                                                       setup["datastore_url"], port), port,
                                                setup["work"] / "server.log"))
        env = dict(os.environ, MAPSERVER_CONFIG_FILE=str(setup["mapserver_conf"]))
        mapserv = stack.enter_context(MapservFastCGI(setup["work"] / "mapserv.sock", env))
        http, fcgi = HTTPClient(port), FastCGIClient(str(mapserv.socket_path))
        stack.callback(http.close)
        stack.callback(fcgi.close)

        def cartotheca(params):
            status, headers, body = http.get("/ows?" + urlencode(params))
            if status != 200:
                raise SystemExit(f"Cartotheca {params}: HTTP {status} {body[:300]!r}")
            return body

        def mapserver(params):
            return fcgi.request(cgi_params("map=BENCH&" + urlencode(params)))[1]

        out = {}
        for label, params in REQUESTS.items():
            sides = {"cartotheca": cartotheca, "mapserver_fcgi": mapserver}
            bodies = {name: [call(params) for _ in range(args.warmup)][-1] for name, call in sides.items()}
            samples: dict[str, list[float]] = {name: [] for name in sides}
            for i in range(args.requests):
                for name, call in (list(sides.items()) if i % 2 == 0 else list(sides.items())[::-1]):
                    t0 = time.perf_counter()
                    call(params)
                    samples[name].append((time.perf_counter() - t0) * 1000)
            out[label] = {name: {**figures(v), "bytes": len(bodies[name]),
                                 "layers": layer_count(bodies[name])} for name, v in samples.items()}
            c, m = out[label]["cartotheca"], out[label]["mapserver_fcgi"]
            log(f"  {backend} {label}: Cartotheca {c['median']:.1f} ms (min {c['min']:.1f}, "
                f"{c['layers']} layers), MapServer {m['median']:.1f} ms (min {m['min']:.1f}, "
                f"{m['layers']} layers); load {load_average()}")
        return {"datasets": setup["count"], "requests": out, "setup_seconds": setup["setup_seconds"],
                "server_memory_mib": server.memory_mib()}


def layer_count(body: bytes) -> int:
    """Named layers (WMS) or feature types (WFS) in a capabilities document."""
    from lxml import etree

    root = etree.fromstring(body)
    # Leaf layers only: MapServer also names the root layer that groups them.
    wms = root.xpath("//*[local-name()='Layer'][not(*[local-name()='Layer'])]/*[local-name()='Name']")
    wfs = root.xpath("//*[local-name()='FeatureType']/*[local-name()='Name']")
    return len(wms) or len(wfs)


def table(results: dict) -> str:
    lines = ["| backend | request | Cartotheca min / median ms | MapServer FastCGI min / median ms | "
             "layers listed (Cartotheca / MapServer) | bytes (Cartotheca / MapServer) |",
             "|---|---|---:|---:|---:|---:|"]
    for backend, r in results["backends"].items():
        for label, v in r["requests"].items():
            c, m = v["cartotheca"], v["mapserver_fcgi"]
            lines.append(f"| {backend} | {label} | {c['min']:.1f} / {c['median']:.1f} | {m['min']:.1f} / "
                         f"{m['median']:.1f} | {c['layers']} / {m['layers']} | "
                         f"{c['bytes']:,} / {m['bytes']:,} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("-n", type=int, default=1000, help="datasets in the catalogue")
    parser.add_argument("--backends", default="geopackage,postgis")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path(__file__).parents[1] / "data" / "geodata-caps.json")
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
