"""bench.geodata.ingest_worker: one timed vector copy, run as its own process by ingest_bench.py.

Each way of loading a file runs in a fresh process, so no cache, pool or allocator state of one
candidate helps the next; the process times its own copy (imports and set-up excluded) and
prints one JSON line: {"seconds", "features", "steps"}.

    python bench/geodata/ingest_worker.py pyogrio-gpkg SRC DST.gpkg
    python bench/geodata/ingest_worker.py pyogrio-postgis SRC DBNAME TABLE
    python bench/geodata/ingest_worker.py store-write SRC DATA_DIR geopackage|postgis [DATASTORE_URL]
    python bench/geodata/ingest_worker.py publish SRC DATA_DIR DATABASE_URL geopackage|postgis \
        [DATASTORE_URL|-] [SLD]
"""

from __future__ import annotations

import io
import json
import sys
import time
from pathlib import Path

import cartotheca  # noqa: F401  (pins PROJ_DATA before any GDAL loads)


def pyogrio_gpkg(src: str, dst: str) -> dict:
    """The floor for the GeoPackage store: pyogrio's Arrow read and write (GDAL 3.12), with
    the GeoPackage R-tree that write_arrow builds by default."""
    from pyogrio.raw import read_arrow, write_arrow

    t0 = time.perf_counter()
    meta, table = read_arrow(src)
    t1 = time.perf_counter()
    write_arrow(table, dst, driver="GPKG", layer=Path(dst).stem,
                geometry_name=meta["geometry_name"] or "wkb_geometry",
                geometry_type=meta["geometry_type"], crs=meta["crs"])
    t2 = time.perf_counter()
    return {"seconds": t2 - t0, "features": table.num_rows, "steps": {"read": t1 - t0, "write": t2 - t1}}


def hex_ewkb(wkb, srid: int):
    """WKB → hex EWKB (PostGIS's text input) without a round trip through shapely: in
    little-endian WKB the type's high byte is 0, so set the SRID flag there and splice the SRID
    in after it, for all rows at once with Arrow kernels, then hex-encode the one data buffer."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import shapely

    first = pc.binary_slice(wkb, 0, 1)
    high = pc.binary_slice(wkb, 4, 5)
    if not (pc.all(pc.equal(first, b"\x01")).as_py() and pc.all(pc.equal(high, b"\x00")).as_py()):
        geoms = shapely.set_srid(shapely.from_wkb(wkb.to_numpy(zero_copy_only=False)), srid)
        return pa.array(shapely.to_wkb(geoms, hex=True, include_srid=True), pa.string())
    flag_and_srid = pa.scalar(b"\x20" + srid.to_bytes(4, "little"), pa.binary())
    ewkb = pc.binary_join_element_wise(pc.binary_slice(wkb, 0, 4), flag_and_srid,
                                       pc.binary_slice(wkb, 5, 1 << 30), pa.scalar(b"", pa.binary()))
    _, offsets_buf, data = ewkb.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int32, count=len(ewkb) + 1, offset=ewkb.offset * 4)
    hexed = data.to_pybytes()[offsets[0]:offsets[-1]].hex().encode()
    new_offsets = ((offsets - offsets[0]) * 2).astype(np.int32)
    return pa.Array.from_buffers(pa.string(), len(ewkb), [None, pa.py_buffer(new_offsets.tobytes()),
                                                          pa.py_buffer(hexed)])


PG_TYPES = {"int64": "bigint", "int32": "integer", "float64": "double precision", "object": "text"}


def pyogrio_postgis(src: str, dbname: str, table_name: str) -> dict:
    """The floor for the PostGIS store. The wheels' GDAL has no PostgreSQL driver, so: pyogrio's
    Arrow read, hex EWKB and CSV by pyarrow, one COPY (psycopg 3), then the GiST index and
    ANALYZE that make the table servable."""
    import psycopg
    import pyarrow.csv as pacsv
    from common import libpq_conninfo
    from pyogrio.raw import read_arrow

    t0 = time.perf_counter()
    meta, table = read_arrow(src)
    t1 = time.perf_counter()
    gcol = meta["geometry_name"] or "wkb_geometry"
    ewkb = hex_ewkb(table.column(gcol).combine_chunks(), 4326)
    table = table.drop_columns([gcol]).append_column("geom", ewkb)
    buf = io.BytesIO()
    pacsv.write_csv(table, buf, pacsv.WriteOptions(include_header=False))
    t2 = time.perf_counter()
    columns = ", ".join(f'"{n}" {PG_TYPES.get(str(d), "text")}'
                        for n, d in zip(meta["fields"], meta["dtypes"], strict=True))
    names = ", ".join(f'"{n}"' for n in table.column_names)
    with psycopg.connect(libpq_conninfo(dbname), autocommit=False) as conn, conn.cursor() as cur:
        cur.execute(f'CREATE TABLE "{table_name}" (fid bigserial PRIMARY KEY, {columns}, '
                    f'geom geometry({meta["geometry_type"]}, 4326))')
        with cur.copy(f'COPY "{table_name}" ({names}) FROM STDIN (FORMAT csv)') as copy:
            view = buf.getbuffer()
            for i in range(0, len(view), 1 << 20):
                copy.write(view[i:i + (1 << 20)])
        t3 = time.perf_counter()
        cur.execute(f'CREATE INDEX ON "{table_name}" USING gist (geom)')
        cur.execute(f'ANALYZE "{table_name}"')
    t4 = time.perf_counter()
    return {"seconds": t4 - t0, "features": table.num_rows,
            "steps": {"read": t1 - t0, "encode": t2 - t1, "copy": t3 - t2, "index+analyze": t4 - t3}}


def _settings(data_dir: str, storage: str, datastore_url: str | None, database_url: str | None = None):
    from cartotheca.settings import Settings

    return Settings(DATA_DIR=Path(data_dir), STORAGE_BACKEND=storage, DATASTORE_URL=datastore_url,
                    DATABASE_URL=database_url, ADMIN_USER="admin", ADMIN_PASSWORD="bench-admin-pass",
                    DEFAULT_MAX_UPLOAD_SIZE=4 << 30, MAX_UNZIPPED_SIZE=16 << 30, MONITORING_ENABLED=False)


def warm_imports() -> None:
    """Modules a server has loaded long before its first upload: importing them (pyarrow.compute
    alone takes ~0.15 s) is not part of a write's cost."""
    import numpy.ma  # noqa: F401  (numpy loads it lazily on the first np.unique, ~0.01 s)
    import psycopg  # noqa: F401  (the floor imports it before its timing too)
    import pyarrow.compute  # noqa: F401
    import pyogrio  # noqa: F401  (the floor's too; validation would import it lazily, ~0.15 s)
    import shapely  # noqa: F401

    import cartotheca.catalogue.dataset_records  # noqa: F401
    import cartotheca.geodata.stats  # noqa: F401
    import cartotheca.geodata.storage.geopackage  # noqa: F401
    import cartotheca.geodata.storage.postgis  # noqa: F401
    import cartotheca.styling.defaults  # noqa: F401  (the default style's SLD; loaded by any map drawn)


def warm_up_publish(session, settings, principal, data_dir: Path) -> None:
    """Publish a ten-feature layer first, as a worker that has served one upload before has:
    the catalogue's SQL statements are then compiled and cached (SQLAlchemy compiles each kind
    of statement once per process), which a fresh process would otherwise pay inside the
    timing. The layer is a different dataset; the timed one is still new to the store."""
    import pyarrow as pa
    import pyogrio.raw
    import shapely

    from cartotheca.catalogue.publishing import publish_files
    from cartotheca.geodata.ingest import IngestOptions
    from cartotheca.ows.thumbnails import MapThumbnails

    boxes = [shapely.box(i, 0, i + 0.5, 0.5) for i in range(10)]
    table = pa.table({"name": [f"warm-up {i}" for i in range(10)],
                      "geometry": pa.array(shapely.to_wkb(boxes), pa.binary())})
    path = data_dir.parent / f"{data_dir.name}_warm_up.gpkg"
    pyogrio.raw.write_arrow(table, str(path), driver="GPKG", layer="warm_up", geometry_name="geometry",
                            geometry_type="Polygon", crs="EPSG:4326")
    try:
        publish_files(session, settings, principal, {"base_file": path},
                      IngestOptions.from_mapping({"title": "warm-up"}), drawer=MapThumbnails())
        session.commit()
    finally:
        path.unlink(missing_ok=True)


def store_write(src: str, data_dir: str, storage: str, datastore_url: str | None = None) -> dict:
    """Cartotheca's storage write alone: ``vector_store(settings).write(SourceLayer, name)``,
    what ingest calls once validation has passed."""
    import pyogrio

    from cartotheca.geodata.storage import SourceLayer
    from cartotheca.geodata.storage.stores import vector_store

    settings = _settings(data_dir, storage, datastore_url)
    warm_imports()
    info = pyogrio.read_info(src)
    source = SourceLayer(path=src, layer=info["layer_name"], encoding="UTF-8", crs_wkt=None,
                         geometry_type=info["geometry_type"], feature_count=info["features"])
    store = vector_store(settings)
    t0 = time.perf_counter()
    stored = store.write(source, f"bench_{Path(src).stem}")
    t1 = time.perf_counter()
    return {"seconds": t1 - t0, "features": stored.feature_count,
            "stored": {"storage": stored.storage, "location": stored.location, "layer": stored.layer}}


def publish(src: str, data_dir: str, database_url: str, storage: str, datastore_url: str = "-",
            sld: str = "-") -> dict:
    """The whole publish path as the upload's import execution runs it: validation reading
    every feature, the storage write, attribute statistics, catalogue rows, the thumbnail of a
    layer up to THUMBNAIL_INLINE_MAX_FEATURES, and the commit. A larger layer's thumbnail is
    drawn afterwards, as the follow-up execution does; it is timed apart (``thumbnail_seconds``).
    The database is migrated before timing starts."""
    from sqlalchemy import select

    from cartotheca.catalogue.accounts import bootstrap, internal_group_ids
    from cartotheca.catalogue.auth import InternalGroups, principal_for
    from cartotheca.catalogue.publishing import publish_files
    from cartotheca.catalogue.thumbnails import draw_dataset_thumbnail
    from cartotheca.db.migrate import upgrade
    from cartotheca.db.models import User
    from cartotheca.db.session import make_engine, make_sessionmaker
    from cartotheca.geodata.ingest import IngestOptions
    from cartotheca.ows.thumbnails import MapThumbnails

    settings = _settings(data_dir, storage, None if datastore_url == "-" else datastore_url, database_url)
    settings.ensure_data_dir()
    warm_imports()
    options = {"title": Path(src).stem}
    if sld != "-":
        options["sld"] = Path(sld).read_text()
    engine = make_engine(settings)
    upgrade(engine)
    session = make_sessionmaker(engine)()
    bootstrap(session, settings)
    session.commit()
    admin = session.scalar(select(User).where(User.username == settings.ADMIN_USER))
    principal = principal_for(session, admin, InternalGroups(*internal_group_ids(session, settings)), "job")
    warm_up_publish(session, settings, principal, Path(data_dir))
    marks: list[tuple[str, float]] = []
    t0 = time.perf_counter()
    deferred: list = []
    resources = publish_files(session, settings, principal, {"base_file": Path(src)},
                              IngestOptions.from_mapping(options), drawer=MapThumbnails(),
                              progress=lambda step, _pct: marks.append((step, time.perf_counter())),
                              defer_thumbnail=deferred.append)
    session.commit()
    t1 = time.perf_counter()
    for resource in deferred:
        draw_dataset_thumbnail(session, settings, MapThumbnails(), resource)
    session.commit()
    thumbnail_seconds = time.perf_counter() - t1 if deferred else 0.0
    from cartotheca.db.models import Dataset

    dataset = session.get(Dataset, resources[0].id)
    marks.append(("end", t1))
    # Each progress mark starts a step; a step lasts until the next mark (the last one,
    # "thumbnails", runs until the commit is done).
    steps = {step: marks[i + 1][1] - at for i, (step, at) in enumerate(marks[:-1])}
    out = {"seconds": t1 - t0, "features": dataset.feature_count, "steps": steps,
           "thumbnail_seconds": thumbnail_seconds,
           "stored": {"storage": dataset.storage, "location": dataset.location, "layer": dataset.layer,
                      "alternate": resources[0].alternate}}
    session.close()
    engine.dispose()
    return out


COMMANDS = {"pyogrio-gpkg": pyogrio_gpkg, "pyogrio-postgis": pyogrio_postgis,
            "store-write": store_write, "publish": publish}

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    print(json.dumps(COMMANDS[sys.argv[1]](*sys.argv[2:])), flush=True)
