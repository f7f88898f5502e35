"""cartotheca.ows.gml: GML 2, 3.1.1 and 3.2 feature collections, and the srsName each version
writes.

Writers stream: a feature collection is produced as a sequence of text chunks, one batch of
features at a time, so a large GetFeature never sits in memory. (The GML geometry literals of
filters are read by ``cartotheca.filters.gml``.)

Axis order follows GeoServer's rules, which the desktop clients expect; reading an srsName and
the axis order it implies is ``ows.crs.parse_srs``.
"""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import shapely

from cartotheca.ows.crs import Srs
from cartotheca.xmlsafe import escape, quoteattr

GML2_NS = "http://www.opengis.net/gml"  # GML 2 and 3.1.1 share it
GML32_NS = "http://www.opengis.net/gml/3.2"

# The GML flavours the WFS speaks: version key → (namespace, display name)
GML2, GML31, GML32 = "2", "3.1.1", "3.2"
NAMESPACES = {GML2: GML2_NS, GML31: GML2_NS, GML32: GML32_NS}

def srs_name(epsg: int, version: str) -> str:
    """The srsName a WFS version writes by default (GeoServer's forms)."""
    if version == GML2:
        return f"http://www.opengis.net/gml/srs/epsg.xml#{epsg}"
    if version == GML31:
        return f"urn:x-ogc:def:crs:EPSG:{epsg}"
    return f"urn:ogc:def:crs:EPSG::{epsg}"


# -- writing geometries ---------------------------------------------------------------------


def _num(value: float) -> str:
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def _pos_list(coords: np.ndarray, swap: bool) -> str:
    if swap:
        coords = coords[:, ::-1]
    return " ".join(_num(v) for v in coords[:, :2].ravel())


def _coordinates(coords: np.ndarray, swap: bool) -> str:
    """GML 2 ``x,y x,y`` tuples."""
    if swap:
        coords = coords[:, ::-1]
    return " ".join(f"{_num(x)},{_num(y)}" for x, y in coords[:, :2])


class GeometryWriter:
    """One GML version's geometry encoding; ``srs`` is written on the outer element."""

    def __init__(self, version: str, swap: bool):
        self.version = version
        self.swap = swap
        self._ids = 0

    def write(self, geom: Any, srs: str | None = None) -> str:
        if geom is None or shapely.is_empty(geom):
            return ""
        attrs = f" srsName={quoteattr(srs)}" if srs else ""
        kind = geom.geom_type
        handler = getattr(self, f"_{kind.lower()}", None)
        if handler is None:
            raise ValueError(f"Cannot write {kind} as GML")
        return handler(geom, attrs)

    def _gid(self) -> str:
        # GML 3.2 requires gml:id on every geometry
        if self.version != GML32:
            return ""
        self._ids += 1
        return f' gml:id="g{self._ids}"'

    def _pos(self, coords: np.ndarray) -> str:
        if self.version == GML2:
            return f"<gml:coordinates>{_coordinates(coords, self.swap)}</gml:coordinates>"
        if len(coords) == 1:
            return f"<gml:pos>{_pos_list(coords, self.swap)}</gml:pos>"
        return f"<gml:posList>{_pos_list(coords, self.swap)}</gml:posList>"

    def _point(self, geom: Any, attrs: str = "") -> str:
        coords = shapely.get_coordinates(geom)
        return f"<gml:Point{self._gid()}{attrs}>{self._pos(coords)}</gml:Point>"

    def _linestring(self, geom: Any, attrs: str = "") -> str:
        coords = shapely.get_coordinates(geom)
        return f"<gml:LineString{self._gid()}{attrs}>{self._pos(coords)}</gml:LineString>"

    def _ring(self, ring: Any) -> str:
        return f"<gml:LinearRing>{self._pos(shapely.get_coordinates(ring))}</gml:LinearRing>"

    def _polygon(self, geom: Any, attrs: str = "") -> str:
        if self.version == GML2:
            outer, inner = "outerBoundaryIs", "innerBoundaryIs"
        else:
            outer, inner = "exterior", "interior"
        parts = [f"<gml:{outer}>{self._ring(geom.exterior)}</gml:{outer}>"]
        parts += [f"<gml:{inner}>{self._ring(r)}</gml:{inner}>" for r in geom.interiors]
        return f"<gml:Polygon{self._gid()}{attrs}>{''.join(parts)}</gml:Polygon>"

    def _multi(self, geom: Any, attrs: str, tag: str, member: str, write) -> str:
        members = "".join(f"<gml:{member}>{write(part)}</gml:{member}>" for part in geom.geoms)
        return f"<gml:{tag}{self._gid()}{attrs}>{members}</gml:{tag}>"

    def _multipoint(self, geom: Any, attrs: str = "") -> str:
        return self._multi(geom, attrs, "MultiPoint", "pointMember", self._point)

    def _multilinestring(self, geom: Any, attrs: str = "") -> str:
        if self.version == GML2:
            return self._multi(geom, attrs, "MultiLineString", "lineStringMember", self._linestring)
        return self._multi(geom, attrs, "MultiCurve", "curveMember", self._linestring)

    def _multipolygon(self, geom: Any, attrs: str = "") -> str:
        if self.version == GML2:
            return self._multi(geom, attrs, "MultiPolygon", "polygonMember", self._polygon)
        return self._multi(geom, attrs, "MultiSurface", "surfaceMember", self._polygon)

    def _geometrycollection(self, geom: Any, attrs: str = "") -> str:
        return self._multi(geom, attrs, "MultiGeometry", "geometryMember", self.write)

    def envelope(self, bounds: Sequence[float], srs: str | None) -> str:
        """``gml:boundedBy`` content for ``bounds`` (minx, miny, maxx, maxy)."""
        attrs = f" srsName={quoteattr(srs)}" if srs else ""
        corners = np.array([[bounds[0], bounds[1]], [bounds[2], bounds[3]]], dtype=float)
        if self.version == GML2:
            return f"<gml:Box{attrs}>{self._pos(corners)}</gml:Box>"
        lower, upper = (_pos_list(corners[i:i + 1], self.swap) for i in (0, 1))
        return (f"<gml:Envelope{attrs}><gml:lowerCorner>{lower}</gml:lowerCorner>"
                f"<gml:upperCorner>{upper}</gml:upperCorner></gml:Envelope>")


# -- writing values and feature collections -------------------------------------------------

def xml_value(value: Any) -> str:
    """A property value as XML text (xsd lexical forms)."""
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, float | np.floating):
        return _num(value)
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return escape(value)


@dataclass
class FeatureType:
    """What a writer needs to know about one feature type in a response."""

    prefix: str  # workspace (XML prefix)
    namespace: str  # its namespace URI
    name: str  # feature type (layer) name
    geometry_name: str
    fields: list[str]  # property names in output order


@dataclass
class Collection:
    """A response: one or more feature types, each with its batches of features."""

    version: str  # GML2 | GML31 | GML32
    srs: Srs
    parts: list[tuple[FeatureType, Iterable[Any]]]  # (type, FeatureBatch iterable)
    number_matched: int | None = None
    number_returned: int | None = None
    wfs_version: str = "2.0.0"
    next_url: str | None = None
    previous_url: str | None = None
    schema_location: str = ""
    bounds: Sequence[float] | None = None  # in output CRS (x/y), for boundedBy


def _namespaces(collection: Collection) -> str:
    seen: dict[str, str] = {}
    for ftype, _ in collection.parts:
        seen.setdefault(ftype.prefix, ftype.namespace)
    decls = "".join(f" xmlns:{p}={quoteattr(ns)}" for p, ns in seen.items())
    return decls + ' xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"'


def _collection_open(c: Collection) -> str:
    gml_ns = NAMESPACES[c.version]
    schema = f" xsi:schemaLocation={quoteattr(c.schema_location)}" if c.schema_location else ""
    head = '<?xml version="1.0" encoding="UTF-8"?>\n'
    if c.version == GML32:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        matched = "unknown" if c.number_matched is None else str(c.number_matched)
        links = ""
        if c.next_url:
            links += f" next={quoteattr(c.next_url)}"
        if c.previous_url:
            links += f" previous={quoteattr(c.previous_url)}"
        return (f'{head}<wfs:FeatureCollection xmlns:wfs="http://www.opengis.net/wfs/2.0" '
                f'xmlns:gml="{gml_ns}"{_namespaces(c)} timeStamp="{stamp}" '
                f'numberMatched="{matched}" numberReturned="{c.number_returned or 0}"{links}{schema}>')
    extra = ""
    if c.version == GML31 and c.number_returned is not None:
        extra = f' numberOfFeatures="{c.number_returned}"'
    wfs_ns = "http://www.opengis.net/wfs"
    return (f'{head}<wfs:FeatureCollection xmlns:wfs="{wfs_ns}" xmlns:gml="{gml_ns}"'
            f"{_namespaces(c)}{extra}{schema}>")


def _bounded_by(c: Collection, writer: GeometryWriter) -> str:
    if c.version == GML32:
        return ""  # WFS 2.0 collections carry no boundedBy by default
    if c.bounds is None:
        if c.version == GML2:
            return "<gml:boundedBy><gml:null>unknown</gml:null></gml:boundedBy>"
        return "<gml:boundedBy><gml:Null>unknown</gml:Null></gml:boundedBy>"
    return f"<gml:boundedBy>{writer.envelope(c.bounds, c.srs.name)}</gml:boundedBy>"


def write_collection(c: Collection) -> Iterator[bytes]:
    """The whole response as UTF-8 chunks (one per batch of features)."""
    writer = GeometryWriter(c.version, c.srs.swap)
    yield (_collection_open(c) + _bounded_by(c, writer)).encode("utf-8")
    member = "wfs:member" if c.version == GML32 else "gml:featureMember"
    id_attr = "gml:id" if c.version != GML2 else "fid"
    for ftype, batches in c.parts:
        qname = f"{ftype.prefix}:{ftype.name}"
        for batch in batches:
            chunk = []
            columns = [batch.properties.get(f) for f in ftype.fields]
            for i, fid in enumerate(batch.fids):
                props = []
                for name, values in zip(ftype.fields, columns, strict=True):
                    value = values[i] if values is not None else None
                    if value is None or (isinstance(value, float) and np.isnan(value)):
                        continue  # nillable properties are simply left out
                    props.append(f"<{ftype.prefix}:{name}>{xml_value(value)}</{ftype.prefix}:{name}>")
                geom = batch.geometries[i]
                if geom is not None and not shapely.is_empty(geom):
                    gml = writer.write(geom, c.srs.name)
                    geo_tag = f"{ftype.prefix}:{ftype.geometry_name}"
                    props.insert(0, f"<{geo_tag}>{gml}</{geo_tag}>")
                chunk.append(f'<{member}><{qname} {id_attr}="{ftype.name}.{fid}">'
                             f"{''.join(props)}</{qname}></{member}>")
            yield "".join(chunk).encode("utf-8")
    yield b"</wfs:FeatureCollection>"
