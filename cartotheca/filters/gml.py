"""cartotheca.filters.gml: GML 2, 3.1.1 and 3.2 geometry literals of filters → shapely geometries.

Coordinates are kept as written, with the srsName found on the element; what that name means
for axis order is decided by whoever compiles the filter.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import shapely

from cartotheca.xmlsafe import children_named, first_child, local_name

GML2_NS = "http://www.opengis.net/gml"  # GML 2 and 3.1.1 share it
GML32_NS = "http://www.opengis.net/gml/3.2"


def _read_coords(element: Any) -> np.ndarray:
    """Coordinates of a Point/LineString/LinearRing: pos, posList, coordinates or coord."""
    pos_list = first_child(element, "posList")
    if pos_list is not None:
        dim = int(pos_list.get("srsDimension") or pos_list.get("dimension") or 2)
        values = np.array((pos_list.text or "").split(), dtype=float)
        return values.reshape(-1, dim)[:, :2]
    positions = children_named(element, "pos")
    if positions:
        return np.array([[float(v) for v in (p.text or "").split()[:2]] for p in positions])
    coordinates = first_child(element, "coordinates")
    if coordinates is not None:
        decimal = coordinates.get("decimal", ".")
        cs = coordinates.get("cs", ",")
        ts = coordinates.get("ts", " ")
        tuples = [t for t in re.split("[" + re.escape(ts) + r"\s]+", (coordinates.text or "").strip()) if t]
        return np.array([[float(v.replace(decimal, ".")) for v in t.split(cs)[:2]] for t in tuples])
    coords = children_named(element, "coord")
    if coords:
        return np.array([[float(first_child(c, "X").text), float(first_child(c, "Y").text)] for c in coords])
    raise ValueError(f"No coordinates in gml:{local_name(element)}")


def _ring_coords(boundary: Any) -> np.ndarray:
    ring = first_child(boundary, "LinearRing")
    if ring is None:
        raise ValueError("A polygon boundary needs a gml:LinearRing")
    return _read_coords(ring)


def _read(element: Any) -> Any:
    kind = local_name(element)
    if kind == "Point":
        return shapely.points(_read_coords(element)[0])
    if kind in ("LineString", "LinearRing"):
        return shapely.linestrings(_read_coords(element))
    if kind in ("Envelope", "Box"):
        if kind == "Box" or first_child(element, "lowerCorner") is None:
            (x0, y0), (x1, y1) = _read_coords(element)[:2]
        else:
            x0, y0 = (float(v) for v in first_child(element, "lowerCorner").text.split()[:2])
            x1, y1 = (float(v) for v in first_child(element, "upperCorner").text.split()[:2])
        return shapely.box(min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1))
    if kind == "Polygon":
        outer = first_child(element, "exterior")
        if outer is None:
            outer = first_child(element, "outerBoundaryIs")
        if outer is None:
            raise ValueError("A gml:Polygon needs an exterior boundary")
        holes = children_named(element, "interior") + children_named(element, "innerBoundaryIs")
        return shapely.Polygon(_ring_coords(outer), [_ring_coords(h) for h in holes])
    if kind in ("MultiPoint", "MultiLineString", "MultiCurve", "MultiPolygon", "MultiSurface",
                "MultiGeometry"):
        parts: list[Any] = []
        for member in element:
            if not isinstance(member.tag, str):
                continue
            parts.extend(_read(g) for g in member if isinstance(g.tag, str))
        return shapely.GeometryCollection(parts) if kind == "MultiGeometry" else _combine(kind, parts)
    raise ValueError(f"gml:{kind} is not supported in filters")


def _combine(kind: str, parts: list[Any]) -> Any:
    if kind == "MultiPoint":
        return shapely.MultiPoint(parts)
    if kind in ("MultiLineString", "MultiCurve"):
        return shapely.MultiLineString(parts)
    return shapely.MultiPolygon(parts)


def read_geometry(element: Any) -> tuple[Any, str | None]:
    """A GML geometry element → (shapely geometry as written, its srsName or None).

    Coordinates are returned in the order written; callers swap them with ``parse_srs``.
    """
    srs = element.get("srsName")
    if srs is None:
        for child in element.iter():
            if isinstance(child.tag, str) and child.get("srsName"):
                srs = child.get("srsName")
                break
    return _read(element), srs
