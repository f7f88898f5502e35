"""Helpers for WFS, filter, export and download tests: requests and reading answers back.

Answers are read with the same libraries users read them with: pyogrio (GDAL) for GML,
GeoJSON, CSV, KML and zipped shapefiles, openpyxl for Excel, lxml for XML documents.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyogrio.raw
import shapely
from lxml import etree

NS = {
    "wfs": "http://www.opengis.net/wfs/2.0", "wfs1": "http://www.opengis.net/wfs",
    "ows": "http://www.opengis.net/ows/1.1", "ows1": "http://www.opengis.net/ows",
    "gml": "http://www.opengis.net/gml/3.2", "gml2": "http://www.opengis.net/gml",
    "xsd": "http://www.w3.org/2001/XMLSchema", "fes": "http://www.opengis.net/fes/2.0",
    "geonode": "http://www.geonode.org/", "kml": "http://www.opengis.net/kml/2.2",
}
SUFFIX = {"json": ".geojson", "csv": ".csv", "kml": ".kml", "zip": ".zip", "gml": ".gml"}


def wfs(client, headers=None, **params):
    query = {"SERVICE": "WFS", **{k.upper(): v for k, v in params.items()}}
    return client.get("/ows", params=query, headers=headers or {})


def xml(response) -> Any:
    return etree.fromstring(response.content)


def ows_exception(response) -> tuple[str, str | None]:
    """(exceptionCode, locator) of an ows:ExceptionReport."""
    root = xml(response)
    exc = root.find("{*}Exception")
    assert exc is not None, response.text
    return exc.get("exceptionCode"), exc.get("locator")


def alternate(resource) -> str:
    return resource.alternate


def layer_name(resource) -> str:
    return resource.alternate.split(":", 1)[1]


def read_features(path: Path | str, layer: str | int | None = None, **options: Any) -> dict[str, Any]:
    """A file's features with GDAL (pyogrio): {"fids", "geometries", "crs", field: values};
    ``options`` are the driver's open options."""
    meta, fids, geometry, values = pyogrio.raw.read(str(path), layer=layer, return_fids=True, **options)
    out: dict[str, Any] = {name: list(column) for name, column in zip(meta["fields"], values, strict=True)}
    out["geometries"] = shapely.from_wkb(geometry) if geometry is not None else None
    out["crs"] = meta["crs"]
    out["fids"] = list(fids) if fids is not None else None
    return out


def save(tmp_path: Path, content: bytes, suffix: str) -> Path:
    path = tmp_path / f"answer{suffix}"
    path.write_bytes(content)
    return path


def read_answer(tmp_path: Path, response, suffix: str, **options: Any) -> dict[str, Any]:
    """Save a response body and read its features back with GDAL."""
    assert response.status_code == 200, response.text[:2000]
    path = save(tmp_path, response.content, suffix)
    if suffix == ".zip":
        return read_features(f"/vsizip/{path}", **options)
    return read_features(path, **options)


def gml_features(response, version: str = "3.2") -> list[Any]:
    """Feature elements of a GML answer, in document order."""
    root = xml(response)
    member = "{http://www.opengis.net/wfs/2.0}member" if version == "3.2" else \
        "{http://www.opengis.net/gml}featureMember"
    return [m[0] for m in root.iter(member)]


def positions(feature: Any) -> np.ndarray:
    """The coordinates written in a GML feature, as written (pos/posList/coordinates)."""
    values: list[float] = []
    for el in feature.iter():
        if not isinstance(el.tag, str):
            continue
        local = etree.QName(el).localname
        if local in ("pos", "posList"):
            values += [float(v) for v in el.text.split()]
        elif local == "coordinates":
            values += [float(v) for pair in el.text.split() for v in pair.split(",")]
    return np.array(values).reshape(-1, 2)


def property_values(features: list[Any], name: str) -> list[str | None]:
    out = []
    for feature in features:
        found = [c for c in feature if etree.QName(c).localname == name]
        out.append(found[0].text if found else None)
    return out
