"""cartotheca.filters.spatial: spatial filter operators → a geometry mask and a bbox prefilter.

A spatial test is answered on the geometries themselves (shapely, vectorised), after the store
narrowed them with its spatial index to those inside the test's bounding box, which is a
necessary condition of the test. Literals are brought into the layer's CRS once, not each
feature out of it; what an srsName means for axis order is the caller's ``parse_srs``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import shapely
from pygeofilter import ast, values
from pyproj import CRS, Transformer

from cartotheca.errors import InvalidFilter
from cartotheca.filters.parse import GeometryLiteral
from cartotheca.filters.values import to_metres

Mask = Callable[[np.ndarray], np.ndarray]
Bounds = tuple[float, float, float, float]


class Srs(Protocol):
    """What the spatial tests need of a parsed srsName."""

    @property
    def epsg(self) -> int: ...

    @property
    def swap(self) -> bool: ...  # coordinates are written (y, x)


@dataclass(frozen=True)
class XY:
    """An EPSG code whose coordinates are written x/y (WKT and EWKT literals always are)."""

    epsg: int
    swap: bool = False


class SpatialTests:
    """Compiles the spatial operators of one filter over one layer."""

    def __init__(self, native_crs: CRS, default_srs: Srs | None,
                 parse_srs: Callable[[str], Srs]):
        self.native_crs = native_crs
        self.default_srs = default_srs
        self.parse_srs = parse_srs

    def compile(self, node: Any, is_geometry: Callable[[Any], bool]) -> tuple[Mask, Bounds | None] | None:
        """The mask and prefilter box of a spatial operator; None for any other node."""

        if isinstance(node, ast.BBox):
            if not is_geometry(node.lhs):
                raise InvalidFilter("BBOX applies to the geometry")
            box = shapely.box(node.minx, node.miny, node.maxx, node.maxy)
            srs = self._parse(node.crs) if node.crs else self._default_srs(cql=True)
            return self._test("intersects", box, srs)
        if isinstance(node, ast.SpatialComparisonPredicate | ast.Relate | ast.SpatialDistancePredicate):
            lhs, rhs = node.lhs, node.rhs
            if not is_geometry(lhs) and is_geometry(rhs):
                lhs, rhs = rhs, lhs
            if not is_geometry(lhs):
                raise InvalidFilter(f"{type(node).__name__} applies to the geometry")
            geometry, srs = self.literal_geometry(rhs)
            if isinstance(node, ast.Relate):
                return self._test("relate", geometry, srs, pattern=node.pattern)
            if isinstance(node, ast.SpatialDistancePredicate):
                op = "dwithin" if isinstance(node, ast.DistanceWithin) else "beyond"
                return self._test(op, geometry, srs, distance=float(node.distance),
                                  units=str(node.units))
            return self._test(node.op.value.lower(), geometry, srs)
        return None

    def _parse(self, name: str) -> Srs:
        try:
            return self.parse_srs(name)
        except ValueError as exc:  # an unknown or malformed srsName
            raise InvalidFilter(str(exc)) from exc

    def _default_srs(self, cql: bool = False) -> Srs | None:
        srs = self.default_srs
        if srs is not None and cql:
            return XY(srs.epsg)  # WKT literals are always x/y
        return srs

    def literal_geometry(self, value: Any) -> tuple[Any, Srs | None]:
        if isinstance(value, GeometryLiteral):
            srs = self._parse(value.srs) if value.srs else self._default_srs()
            return value.geometry, srs
        if isinstance(value, values.Envelope):
            return shapely.box(min(value.x1, value.x2), min(value.y1, value.y2),
                               max(value.x1, value.x2), max(value.y1, value.y2)), \
                self._default_srs(cql=True)
        if isinstance(value, values.Geometry):
            mapping = dict(value.geometry)
            crs = mapping.pop("crs", None)
            geometry = shapely.geometry.shape(mapping)
            if crs:
                return geometry, XY(self._parse(crs["properties"]["name"]).epsg)  # EWKT is x/y
            return geometry, self._default_srs(cql=True)
        raise InvalidFilter("A spatial operator needs a geometry literal")

    def to_native(self, geometry: Any, srs: Srs | None) -> Any:
        if srs is None:
            return geometry
        if srs.swap:
            geometry = shapely.transform(geometry, lambda c: c[:, ::-1])
        source = CRS.from_epsg(srs.epsg)
        if source == self.native_crs:
            return geometry
        xmin, ymin, xmax, ymax = geometry.bounds
        step = max(xmax - xmin, ymax - ymin) / 32
        if step > 0 and geometry.geom_type not in ("Point", "MultiPoint"):
            geometry = shapely.segmentize(geometry, step)
        transformer = Transformer.from_crs(source, self.native_crs, always_xy=True)
        return shapely.transform(geometry, lambda c: np.column_stack(transformer.transform(c[:, 0], c[:, 1])))

    def _test(self, op: str, geometry: Any, srs: Srs | None, *, pattern: str = "",
              distance: float = 0.0, units: str = "") -> tuple[Mask, Bounds | None]:
        native = self.to_native(geometry, srs)
        if not shapely.is_valid(native):
            native = shapely.make_valid(native)
        shapely.prepare(native)
        bounds: Bounds | None = tuple(native.bounds) if not shapely.is_empty(native) else None
        tests: dict[str, Mask] = {
            "intersects": lambda g: shapely.intersects(native, g),
            "disjoint": lambda g: shapely.disjoint(native, g) & ~shapely.is_missing(g),
            "contains": lambda g: shapely.within(native, g),  # the feature contains the literal
            "within": lambda g: shapely.contains(native, g),  # the feature is within it
            "touches": lambda g: shapely.touches(native, g),
            "crosses": lambda g: shapely.crosses(g, native),
            "overlaps": lambda g: shapely.overlaps(g, native),
            "equals": lambda g: shapely.equals(g, native),
            "relate": lambda g: shapely.relate_pattern(g, native, pattern),
        }
        if op in ("dwithin", "beyond"):
            mask, bounds = self._distance(native, distance, units)
            if op == "beyond":
                within = mask
                mask = lambda g: ~within(g) & ~shapely.is_missing(g)  # noqa: E731
                bounds = None
            return mask, bounds
        if op not in tests:
            raise InvalidFilter(f"Unsupported spatial operator {op}")
        if op in ("disjoint", "relate"):
            bounds = None
        return tests[op], bounds

    def _distance(self, native: Any, distance: float, units: str) -> tuple[Mask, Bounds | None]:
        crs = self.native_crs
        metres = to_metres(distance, units)
        xmin, ymin, xmax, ymax = native.bounds
        if metres is None or not crs.is_geographic:
            if metres is not None and crs.axis_info and crs.axis_info[0].unit_conversion_factor:
                distance = metres / crs.axis_info[0].unit_conversion_factor
            d = distance
            return (lambda g: shapely.dwithin(g, native, d)), (xmin - d, ymin - d, xmax + d, ymax + d)
        # Geographic data, linear distance: measure in an azimuthal equidistant projection
        # centred on the literal (exact distances from it, GeoServer-like results).
        centre = native.centroid
        local = CRS.from_proj4(f"+proj=aeqd +lat_0={centre.y} +lon_0={centre.x} +datum=WGS84 +units=m")
        transformer = Transformer.from_crs(crs, local, always_xy=True)

        def project(g: Any) -> Any:
            return shapely.transform(g, lambda c: np.column_stack(transformer.transform(c[:, 0], c[:, 1])))

        target = project(native)
        shapely.prepare(target)
        dlat = metres / 110_574.0
        maxlat = min(89.9, max(abs(ymin), abs(ymax)) + dlat)
        dlon = min(360.0, metres / (111_320.0 * math.cos(math.radians(maxlat))))
        return (lambda g: shapely.dwithin(target, project(g), metres)), \
            (xmin - dlon, ymin - dlat, xmax + dlon, ymax + dlat)

