"""Small real geodata files with known content, and publishing them through the real ingest.

Other test modules build datasets with these instead of hand-made rows::

    path = write_polygons(tmp_path)
    resource = publish_file(db, settings, owner, path, title="Areas")

Every generator writes a real file with pyogrio or rasterio and returns its path; the content is
described by the module constants (``POINTS``, ``POLYGONS``, ``raster_pixels``) so a test can
compare what it reads back, renders or downloads with what went in.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyogrio.raw
import rasterio
import shapely
from pyproj import Transformer
from rasterio.transform import from_bounds

import cartotheca  # noqa: F401  (pins PROJ_DATA before rasterio is imported)
from cartotheca.catalogue.accounts import internal_group_ids
from cartotheca.catalogue.auth import InternalGroups, principal_for
from cartotheca.catalogue.publishing import publish
from cartotheca.db.models import Resource, User
from cartotheca.ows.thumbnails import MapThumbnails
from cartotheca.settings import Settings

# -- points ---------------------------------------------------------------------------------
# Ten points in lon/lat: point i (0-based) is at (-10 + 2i, 40 + i); attributes per point.
POINT_COUNT = 10
CATEGORIES = ("a", "b", "c")


def point_rows(count: int = POINT_COUNT) -> list[dict[str, Any]]:
    """The points ``write_points`` writes: lon, lat and their attributes."""
    return [
        {"lon": -10.0 + 2 * i, "lat": 40.0 + i, "id": i + 1, "name": f"point {i + 1}",
         "value": i * 1.5, "category": CATEGORIES[i % 3],
         "observed": dt.date(2024, 1, 1) + dt.timedelta(days=i)}
        for i in range(count)
    ]


POINTS = point_rows()

# -- polygons -------------------------------------------------------------------------------
# Four 10° squares in a 2x2 grid over lon 0..20, lat 40..60, each with its own fill colour, so a
# map rendered with ``polygons_sld()`` has a known colour in each quarter. A fifth, small square
# sits in the middle of the south-west one (drawn on top: it comes last).
POLYGONS: list[dict[str, Any]] = [
    {"bounds": (0.0, 50.0, 10.0, 60.0), "name": "north-west", "color": "#ff0000", "rank": 1,
     "area": 100.0},
    {"bounds": (10.0, 50.0, 20.0, 60.0), "name": "north-east", "color": "#00ff00", "rank": 2,
     "area": 100.0},
    {"bounds": (0.0, 40.0, 10.0, 50.0), "name": "south-west", "color": "#0000ff", "rank": 3,
     "area": 100.0},
    {"bounds": (10.0, 40.0, 20.0, 50.0), "name": "south-east", "color": "#ffff00", "rank": 4,
     "area": 100.0},
    {"bounds": (4.0, 44.0, 6.0, 46.0), "name": "centre", "color": "#ff00ff", "rank": 5,
     "area": 4.0},
]
POLYGONS_BOUNDS = (0.0, 40.0, 20.0, 60.0)


def polygons_sld(layer: str = "polygons") -> str:
    """An SLD 1.0 filling each polygon with its ``color`` attribute's value (one rule each)."""
    rules = "".join(
        f"<Rule><Name>{p['name']}</Name><ogc:Filter><ogc:PropertyIsEqualTo>"
        f"<ogc:PropertyName>name</ogc:PropertyName><ogc:Literal>{p['name']}</ogc:Literal>"
        f"</ogc:PropertyIsEqualTo></ogc:Filter><PolygonSymbolizer><Fill>"
        f"<CssParameter name=\"fill\">{p['color']}</CssParameter></Fill></PolygonSymbolizer></Rule>"
        for p in POLYGONS
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<StyledLayerDescriptor version="1.0.0" xmlns="http://www.opengis.net/sld" '
        'xmlns:ogc="http://www.opengis.net/ogc" xmlns:xlink="http://www.w3.org/1999/xlink">'
        f"<NamedLayer><Name>{layer}</Name><UserStyle><Name>{layer}_colours</Name>"
        f"<FeatureTypeStyle>{rules}</FeatureTypeStyle></UserStyle></NamedLayer>"
        "</StyledLayerDescriptor>"
    )


# -- writing vectors ------------------------------------------------------------------------
DRIVER_SUFFIX = {"GPKG": ".gpkg", "ESRI Shapefile": ".shp", "GeoJSON": ".geojson",
                 "FlatGeobuf": ".fgb", "KML": ".kml", "CSV": ".csv"}


def _reproject(xs: Sequence[float], ys: Sequence[float], crs: str) -> tuple[np.ndarray, np.ndarray]:
    if crs.upper() in ("EPSG:4326", "OGC:CRS84"):
        return np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    transformer = Transformer.from_crs("EPSG:4326", crs, always_xy=True)
    out_x, out_y = transformer.transform(np.asarray(xs, dtype=float), np.asarray(ys, dtype=float))
    return np.asarray(out_x), np.asarray(out_y)


def _write(path: Path, geometries: np.ndarray, columns: Mapping[str, np.ndarray], *, driver: str,
           crs: str, geometry_type: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    kwargs: dict[str, Any] = {}
    if driver == "CSV":
        kwargs["layer_options"] = {"GEOMETRY": "AS_WKT"}
    pyogrio.raw.write(str(path), shapely.to_wkb(geometries), list(columns.values()), list(columns),
                      driver=driver, crs=crs, geometry_type=geometry_type, **kwargs)
    return path


def write_points(tmp_path: Path, name: str = "points", *, driver: str = "GPKG",
                 crs: str = "EPSG:4326", count: int = POINT_COUNT) -> Path:
    """``count`` points of ``point_rows(count)`` in ``crs`` (coordinates reprojected from lon/lat).

    Attributes: id (int), name (text), value (real), category (text), observed (date; a
    date-time in FlatGeobuf, text in drivers without a date type).
    """
    rows = point_rows(count)
    xs, ys = _reproject([r["lon"] for r in rows], [r["lat"] for r in rows], crs)
    geometries = shapely.points(xs, ys)
    observed = np.array([np.datetime64(r["observed"]) for r in rows], dtype="datetime64[D]")
    if driver in ("ESRI Shapefile", "FlatGeobuf", "GPKG", "GeoJSON"):
        observed_col: np.ndarray = observed
    else:
        observed_col = np.array([r["observed"].isoformat() for r in rows], dtype=object)
    columns = {
        "id": np.array([r["id"] for r in rows], dtype=np.int32),
        "name": np.array([r["name"] for r in rows], dtype=object),
        "value": np.array([r["value"] for r in rows], dtype=np.float64),
        "category": np.array([r["category"] for r in rows], dtype=object),
        "observed": observed_col,
    }
    path = tmp_path / f"{name}{DRIVER_SUFFIX[driver]}"
    return _write(path, geometries, columns, driver=driver, crs=crs, geometry_type="Point")


def write_points_csv(tmp_path: Path, name: str = "points", *, lon: str = "longitude",
                     lat: str = "latitude", count: int = POINT_COUNT) -> Path:
    """The points as a plain CSV with lon/lat columns (no geometry column, no CRS)."""
    path = tmp_path / f"{name}.csv"
    lines = [f"id,name,value,category,{lon},{lat}"]
    lines += [f"{r['id']},{r['name']},{r['value']},{r['category']},{r['lon']},{r['lat']}"
              for r in point_rows(count)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_polygons(tmp_path: Path, name: str = "polygons", *, driver: str = "GPKG",
                   crs: str = "EPSG:4326") -> Path:
    """The ``POLYGONS`` squares (attributes name, color, rank, area) in ``crs``."""
    geometries = []
    for poly in POLYGONS:
        minx, miny, maxx, maxy = poly["bounds"]
        # Densified edges so a reprojected square stays close to the true shape.
        ring_x = np.concatenate([np.linspace(minx, maxx, 11), np.full(11, maxx),
                                 np.linspace(maxx, minx, 11), np.full(11, minx)])
        ring_y = np.concatenate([np.full(11, miny), np.linspace(miny, maxy, 11),
                                 np.full(11, maxy), np.linspace(maxy, miny, 11)])
        xs, ys = _reproject(ring_x, ring_y, crs)
        geometries.append(shapely.Polygon(np.column_stack([xs, ys])).normalize())
    columns = {
        "name": np.array([p["name"] for p in POLYGONS], dtype=object),
        "color": np.array([p["color"] for p in POLYGONS], dtype=object),
        "rank": np.array([p["rank"] for p in POLYGONS], dtype=np.int32),
        "area": np.array([p["area"] for p in POLYGONS], dtype=np.float64),
    }
    path = tmp_path / f"{name}{DRIVER_SUFFIX[driver]}"
    return _write(path, np.array(geometries), columns, driver=driver, crs=crs,
                  geometry_type="Polygon")


def write_lines(tmp_path: Path, name: str = "lines", *, driver: str = "GPKG") -> Path:
    """Three lon/lat lines: along the equator, along meridian 10, and a diagonal."""
    geometries = np.array([
        shapely.LineString([(-10, 0), (10, 0)]),
        shapely.LineString([(10, -10), (10, 10)]),
        shapely.LineString([(-5, -5), (0, 0), (5, 5)]),
    ])
    columns = {"name": np.array(["equator", "meridian", "diagonal"], dtype=object),
               "length": np.array([20.0, 20.0, 14.142135623730951])}
    path = tmp_path / f"{name}{DRIVER_SUFFIX[driver]}"
    return _write(path, geometries, columns, driver=driver, crs="EPSG:4326",
                  geometry_type="LineString")


# -- rasters --------------------------------------------------------------------------------


def raster_pixels(width: int = 64, height: int = 48, bands: int = 1,
                  dtype: str = "uint8") -> np.ndarray:
    """The pixels ``write_raster`` writes: band b (0-based) holds (row + 2*col + 40*b) % 251."""
    rows, cols = np.indices((height, width))
    stack = np.stack([(rows + 2 * cols + 40 * b) % 251 for b in range(bands)])
    return stack.astype(dtype)


def write_raster(tmp_path: Path, name: str = "raster", *, width: int = 64, height: int = 48,
                 bounds: tuple[float, float, float, float] = (0.0, 40.0, 16.0, 52.0),
                 crs: str = "EPSG:4326", bands: int = 1, dtype: str = "uint8",
                 nodata: float | None = None, tiled: bool = False) -> Path:
    """A GeoTIFF of ``raster_pixels`` covering ``bounds`` (in ``crs`` units)."""
    path = tmp_path / f"{name}.tif"
    path.parent.mkdir(parents=True, exist_ok=True)
    profile = {"driver": "GTiff", "width": width, "height": height, "count": bands, "dtype": dtype,
               "crs": crs, "transform": from_bounds(*bounds, width, height)}
    if nodata is not None:
        profile["nodata"] = nodata
    if tiled:
        profile.update(tiled=True, blockxsize=16, blockysize=16)
    with rasterio.open(path, "w", **profile) as dst:
        dst.write(raster_pixels(width, height, bands, dtype))
    return path


# -- publishing -----------------------------------------------------------------------------
SHAPEFILE_PARTS = {".dbf": "dbf_file", ".shx": "shx_file", ".prj": "prj_file", ".cpg": "cpg_file"}


def upload_files(path: Path) -> dict[str, Path]:
    """The upload form's file fields for ``path``: a shapefile brings its sibling parts."""
    files = {"base_file": Path(path)}
    if Path(path).suffix.lower() == ".shp":
        for suffix, field in SHAPEFILE_PARTS.items():
            sibling = Path(path).with_suffix(suffix)
            if sibling.exists():
                files[field] = sibling
    return files


def publish_file(db, settings: Settings, owner: User, path: Path | str, **options: Any) -> Resource:
    """Publish ``path`` as ``owner`` through the real ingest and commit; returns the resource.

    ``options`` are the upload form's options: title (or layer_title), name, charset, time,
    sld (SLD text), xml (ISO XML text), permissions (perm spec), overwrite_existing_layer ...
    """
    anonymous_id, registered_id = internal_group_ids(db, settings)
    principal = principal_for(db, owner, InternalGroups(anonymous_id, registered_id), "job")
    resource = publish(db, settings, principal, upload_files(Path(path)), dict(options), MapThumbnails())
    db.commit()
    return resource


# -- uploading over HTTP --------------------------------------------------------------------
UPLOAD_URL = "/api/v2/uploads/upload"


def upload_parts(path: Path, **extra_files: Path) -> list[tuple[str, tuple[str, bytes, str]]]:
    """The multipart file parts for ``path`` (and its shapefile siblings) plus ``extra_files``."""
    files = upload_files(Path(path))
    files.update(extra_files)
    return [(field, (p.name, p.read_bytes(), "application/octet-stream")) for field, p in files.items()]


def post_upload(client, headers: Mapping[str, str], path: Path, *, method: str = "POST",
                url: str = UPLOAD_URL, extra_files: Mapping[str, Path] | None = None, **fields: str):
    """Send ``path`` to the upload endpoint the way clients do (text fields, then file parts)."""
    data = {"charset": "UTF-8", **{k: str(v) for k, v in fields.items()}}
    return client.request(method, url, headers=dict(headers), data=data,
                          files=upload_parts(path, **(extra_files or {})))


def wait_execution(client, headers: Mapping[str, str], exec_id: str, timeout: float = 60.0) -> dict:
    """Poll the execution request until it is finished or failed; returns the record."""
    deadline = time.monotonic() + timeout
    record: dict = {}
    while time.monotonic() < deadline:
        response = client.get(f"/api/v2/executionrequest/{exec_id}", headers=dict(headers))
        assert response.status_code == 200, response.text
        record = response.json()["request"]
        if record["status"] in ("finished", "failed"):
            return record
        time.sleep(0.05)
    raise AssertionError(f"execution {exec_id} still {record.get('status')} after {timeout}s")


def upload_and_wait(client, headers: Mapping[str, str], path: Path, **fields: str) -> dict:
    response = post_upload(client, headers, path, **fields)
    assert response.status_code == 200, response.text
    return wait_execution(client, headers, response.json()["execution_id"])
