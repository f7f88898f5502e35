"""cartotheca.ows.wfs.capabilities: WFS capabilities (1.0.0, 1.1.0, 2.0.0).

Built from stored metadata only: titles, extents, native CRS and keywords of the datasets the
requester may view. Operation URLs are the absolute public service URL, since clients send
their next requests exactly there.
"""

from __future__ import annotations

from typing import Any

from lxml import etree

from cartotheca import xmlsafe
from cartotheca.catalogue.service_metadata import service_metadata
from cartotheca.ows import gml, service_identity
from cartotheca.ows.request import OWSRequest
from cartotheca.ows.wfs.feature_types import FeatureTypeInfo, namespace_uri
from cartotheca.ows.wfs.formats import advertised_formats

XLINK = "http://www.w3.org/1999/xlink"
XSI = "http://www.w3.org/2001/XMLSchema-instance"
COMPARISONS = ("PropertyIsEqualTo", "PropertyIsNotEqualTo", "PropertyIsLessThan",
               "PropertyIsGreaterThan", "PropertyIsLessThanOrEqualTo",
               "PropertyIsGreaterThanOrEqualTo", "PropertyIsLike", "PropertyIsNull",
               "PropertyIsBetween")
SPATIAL = ("BBOX", "Equals", "Disjoint", "Intersects", "Touches", "Crosses", "Within", "Contains",
           "Overlaps", "DWithin", "Beyond")
TEMPORAL = ("After", "Before", "During", "TEquals", "Begins", "Ends", "Meets", "MetBy")
CONSTRAINTS_20 = {
    "ImplementsBasicWFS": "TRUE", "ImplementsTransactionalWFS": "FALSE",
    "ImplementsLockingWFS": "FALSE", "KVPEncoding": "TRUE", "XMLEncoding": "TRUE",
    "SOAPEncoding": "FALSE", "ImplementsInheritance": "FALSE", "ImplementsRemoteResolve": "FALSE",
    "ImplementsResultPaging": "TRUE", "ImplementsStandardJoins": "FALSE",
    "ImplementsSpatialJoins": "FALSE", "ImplementsTemporalJoins": "FALSE",
    "ImplementsFeatureVersioning": "FALSE", "ManageStoredQueries": "FALSE",
}
FES_CONFORMANCE = {
    "ImplementsQuery": "TRUE", "ImplementsAdHocQuery": "TRUE", "ImplementsFunctions": "FALSE",
    "ImplementsResourceId": "TRUE", "ImplementsMinStandardFilter": "TRUE",
    "ImplementsStandardFilter": "TRUE", "ImplementsMinSpatialFilter": "TRUE",
    "ImplementsSpatialFilter": "TRUE", "ImplementsMinTemporalFilter": "TRUE",
    "ImplementsTemporalFilter": "TRUE", "ImplementsVersionNav": "FALSE",
    "ImplementsSorting": "TRUE", "ImplementsExtendedOperators": "FALSE",
    "ImplementsMinimumXPath": "TRUE", "ImplementsSchemaElementFunc": "FALSE",
}


def _el(parent: Any, tag: str, text: Any = None, **attrs: str) -> Any:
    return xmlsafe.sub_element(parent, tag, text, {k.replace("__", ":"): v for k, v in attrs.items()})


def _num(value: float) -> str:
    return repr(float(value)).removesuffix(".0")


def _ll(info: FeatureTypeInfo) -> tuple[float, float, float, float]:
    r = info.resource
    values = (r.ll_minx, r.ll_miny, r.ll_maxx, r.ll_maxy)
    if any(v is None for v in values):
        return (-180.0, -90.0, 180.0, 90.0)
    return tuple(float(v) for v in values)


class _Builder:
    """Shared pieces of the three capabilities versions."""

    def __init__(self, req: OWSRequest, version: str, types: list[FeatureTypeInfo]):
        self.req = req
        self.version = version
        self.types = types
        self.url = req.service_url
        self.formats = advertised_formats(version)
        self.workspaces = {t.workspace: namespace_uri(req, t.workspace) for t in types}
        self.meta = service_metadata(req.settings, "WFS")
        # the WMS list of advertised CRSs, as EPSG numbers
        self.other_crs = [int(code.partition(":")[2]) for code in req.settings.WMS_ADVERTISED_CRS]

    def ows_identification(self, root: Any, ows: str) -> None:
        versions = ("2.0.0", "1.1.0", "1.0.0") if self.version == "2.0.0" else (self.version,)
        service_identity.ows_identification(root, ows, self.meta, "WFS", versions)
        service_identity.ows_provider(root, ows, self.meta)

    def ows_operation(self, parent: Any, ows: str, name: str, params: dict[str, list[str]]) -> None:
        op = _el(parent, f"{{{ows}}}Operation", name=name)
        http = _el(_el(op, f"{{{ows}}}DCP"), f"{{{ows}}}HTTP")
        _el(http, f"{{{ows}}}Get", **{f"{{{XLINK}}}href": self.url + "?"})
        _el(http, f"{{{ows}}}Post", **{f"{{{XLINK}}}href": self.url})
        for pname, values in params.items():
            param = _el(op, f"{{{ows}}}Parameter", name=pname)
            if ows.endswith("1.1"):
                allowed = _el(param, f"{{{ows}}}AllowedValues")
                for v in values:
                    _el(allowed, f"{{{ows}}}Value", v)
            else:
                for v in values:
                    _el(param, f"{{{ows}}}Value", v)

    def operations(self, root: Any, ows: str) -> Any:
        meta = _el(root, f"{{{ows}}}OperationsMetadata")
        versions = ["2.0.0", "1.1.0", "1.0.0"]
        self.ows_operation(meta, ows, "GetCapabilities", {"AcceptVersions": versions,
                                                          "AcceptFormats": ["text/xml"]})
        schema_formats = ["application/gml+xml; version=3.2", "text/xml; subtype=gml/3.1.1"] \
            if self.version == "2.0.0" else ["text/xml; subtype=gml/3.1.1"]
        self.ows_operation(meta, ows, "DescribeFeatureType", {"outputFormat": schema_formats})
        self.ows_operation(meta, ows, "GetFeature", {"resultType": ["results", "hits"],
                                                     "outputFormat": self.formats})
        return meta

    def keywords(self, parent: Any, ows: str, info: FeatureTypeInfo) -> None:
        if info.keywords:
            words = _el(parent, f"{{{ows}}}Keywords")
            for word in info.keywords:
                _el(words, f"{{{ows}}}Keyword", word)

    def wgs84_box(self, parent: Any, ows: str, info: FeatureTypeInfo) -> None:
        minx, miny, maxx, maxy = _ll(info)
        box = _el(parent, f"{{{ows}}}WGS84BoundingBox")
        _el(box, f"{{{ows}}}LowerCorner", f"{_num(minx)} {_num(miny)}")
        _el(box, f"{{{ows}}}UpperCorner", f"{_num(maxx)} {_num(maxy)}")

    def nsmap(self, base: dict[str | None, str]) -> dict[str | None, str]:
        out = dict(base)
        for prefix, uri in self.workspaces.items():
            if prefix not in out:
                out[prefix] = uri
        return out


def _fes_capabilities(root: Any, fes: str, ows: str) -> None:
    caps = _el(root, f"{{{fes}}}Filter_Capabilities")
    conformance = _el(caps, f"{{{fes}}}Conformance")
    for name, value in FES_CONFORMANCE.items():
        constraint = _el(conformance, f"{{{fes}}}Constraint", name=name)
        _el(constraint, f"{{{ows}}}NoValues")
        _el(constraint, f"{{{ows}}}DefaultValue", value)
    ids = _el(caps, f"{{{fes}}}Id_Capabilities")
    _el(ids, f"{{{fes}}}ResourceIdentifier", name="fes:ResourceId")
    scalar = _el(caps, f"{{{fes}}}Scalar_Capabilities")
    _el(scalar, f"{{{fes}}}LogicalOperators")
    comparisons = _el(scalar, f"{{{fes}}}ComparisonOperators")
    for op in COMPARISONS:
        _el(comparisons, f"{{{fes}}}ComparisonOperator", name=op)
    spatial = _el(caps, f"{{{fes}}}Spatial_Capabilities")
    operands = _el(spatial, f"{{{fes}}}GeometryOperands")
    for operand in ("gml:Envelope", "gml:Point", "gml:LineString", "gml:Polygon", "gml:MultiPoint",
                    "gml:MultiCurve", "gml:MultiSurface"):
        _el(operands, f"{{{fes}}}GeometryOperand", name=operand)
    operators = _el(spatial, f"{{{fes}}}SpatialOperators")
    for op in SPATIAL:
        _el(operators, f"{{{fes}}}SpatialOperator", name=op)
    temporal = _el(caps, f"{{{fes}}}Temporal_Capabilities")
    t_operands = _el(temporal, f"{{{fes}}}TemporalOperands")
    for operand in ("gml:TimeInstant", "gml:TimePeriod"):
        _el(t_operands, f"{{{fes}}}TemporalOperand", name=operand)
    t_ops = _el(temporal, f"{{{fes}}}TemporalOperators")
    for op in TEMPORAL:
        _el(t_ops, f"{{{fes}}}TemporalOperator", name=op)


def _capabilities_20(b: _Builder) -> Any:
    wfs, ows, fes = "http://www.opengis.net/wfs/2.0", "http://www.opengis.net/ows/1.1", \
        "http://www.opengis.net/fes/2.0"
    root = etree.Element(f"{{{wfs}}}WFS_Capabilities", version="2.0.0", nsmap=b.nsmap({
        "wfs": wfs, "ows": ows, "fes": fes, "gml": gml.GML32_NS, "xlink": XLINK, "xsi": XSI}))
    root.set(f"{{{XSI}}}schemaLocation", f"{wfs} http://schemas.opengis.net/wfs/2.0/wfs.xsd")
    b.ows_identification(root, ows)
    meta = b.operations(root, ows)
    constraints = dict(CONSTRAINTS_20, CountDefault=str(b.req.settings.WFS_COUNT_DEFAULT))
    for name, value in constraints.items():
        constraint = _el(meta, f"{{{ows}}}Constraint", name=name)
        _el(constraint, f"{{{ows}}}NoValues")
        _el(constraint, f"{{{ows}}}DefaultValue", value)
    query = _el(meta, f"{{{ows}}}Constraint", name="QueryExpressions")
    _el(_el(query, f"{{{ows}}}AllowedValues"), f"{{{ows}}}Value", "wfs:Query")
    types = _el(root, f"{{{wfs}}}FeatureTypeList")
    for info in b.types:
        _feature_type(b, types, wfs, ows, info, crs="CRS", gml_version=gml.GML32)
    _fes_capabilities(root, fes, ows)
    return root


def _feature_type(b: _Builder, types: Any, wfs: str, ows: str, info: Any, *, crs: str,
                  gml_version: Any) -> None:
    """One FeatureType entry; 2.0 names its CRS elements DefaultCRS/OtherCRS, 1.1 DefaultSRS/OtherSRS."""
    ft = _el(types, f"{{{wfs}}}FeatureType")
    _el(ft, f"{{{wfs}}}Name", info.qname)
    _el(ft, f"{{{wfs}}}Title", info.resource.title or info.name)
    _el(ft, f"{{{wfs}}}Abstract", info.resource.abstract or "")
    b.keywords(ft, ows, info)
    _el(ft, f"{{{wfs}}}Default{crs}", gml.srs_name(info.epsg, gml_version))
    for code in b.other_crs:
        if code != info.epsg:
            _el(ft, f"{{{wfs}}}Other{crs}", gml.srs_name(code, gml_version))
    formats = _el(ft, f"{{{wfs}}}OutputFormats")
    for fmt in b.formats:
        _el(formats, f"{{{wfs}}}Format", fmt)
    b.wgs84_box(ft, ows, info)


def _capabilities_11(b: _Builder) -> Any:
    wfs, ows, ogc = "http://www.opengis.net/wfs", "http://www.opengis.net/ows", "http://www.opengis.net/ogc"
    root = etree.Element(f"{{{wfs}}}WFS_Capabilities", version="1.1.0", nsmap=b.nsmap({
        "wfs": wfs, "ows": ows, "ogc": ogc, "gml": gml.GML2_NS, "xlink": XLINK, "xsi": XSI}))
    root.set(f"{{{XSI}}}schemaLocation", f"{wfs} http://schemas.opengis.net/wfs/1.1.0/wfs.xsd")
    b.ows_identification(root, ows)
    b.operations(root, ows)
    types = _el(root, f"{{{wfs}}}FeatureTypeList")
    _el(_el(types, f"{{{wfs}}}Operations"), f"{{{wfs}}}Operation", "Query")
    for info in b.types:
        _feature_type(b, types, wfs, ows, info, crs="SRS", gml_version=gml.GML31)
    _filter_capabilities_11(root, ogc)
    return root


def _filter_capabilities_11(root: Any, ogc: str) -> None:
    caps = _el(root, f"{{{ogc}}}Filter_Capabilities")
    spatial = _el(caps, f"{{{ogc}}}Spatial_Capabilities")
    operands = _el(spatial, f"{{{ogc}}}GeometryOperands")
    for operand in ("gml:Envelope", "gml:Point", "gml:LineString", "gml:Polygon"):
        _el(operands, f"{{{ogc}}}GeometryOperand", operand)
    operators = _el(spatial, f"{{{ogc}}}SpatialOperators")
    for op in SPATIAL:
        _el(operators, f"{{{ogc}}}SpatialOperator", name=op)
    scalar = _el(caps, f"{{{ogc}}}Scalar_Capabilities")
    _el(scalar, f"{{{ogc}}}LogicalOperators")
    comparisons = _el(scalar, f"{{{ogc}}}ComparisonOperators")
    for op in ("LessThan", "GreaterThan", "LessThanEqualTo", "GreaterThanEqualTo", "EqualTo",
               "NotEqualTo", "Like", "Between", "NullCheck"):
        _el(comparisons, f"{{{ogc}}}ComparisonOperator", op)
    arithmetic = _el(scalar, f"{{{ogc}}}ArithmeticOperators")
    _el(arithmetic, f"{{{ogc}}}SimpleArithmetic")
    ids = _el(caps, f"{{{ogc}}}Id_Capabilities")
    _el(ids, f"{{{ogc}}}EID")
    _el(ids, f"{{{ogc}}}FID")


def _capabilities_10(b: _Builder) -> Any:
    wfs, ogc = "http://www.opengis.net/wfs", "http://www.opengis.net/ogc"
    root = etree.Element(f"{{{wfs}}}WFS_Capabilities", version="1.0.0",
                         nsmap=b.nsmap({None: wfs, "ogc": ogc, "xsi": XSI}))
    service = _el(root, f"{{{wfs}}}Service")
    _el(service, f"{{{wfs}}}Name", "WFS")
    _el(service, f"{{{wfs}}}Title", b.meta.title)
    _el(service, f"{{{wfs}}}Abstract", b.meta.abstract)
    if b.meta.keywords:
        _el(service, f"{{{wfs}}}Keywords", ", ".join(b.meta.keywords))
    _el(service, f"{{{wfs}}}OnlineResource", b.url)
    _el(service, f"{{{wfs}}}Fees", b.meta.fees)
    _el(service, f"{{{wfs}}}AccessConstraints", b.meta.access_constraints)
    request = _el(_el(root, f"{{{wfs}}}Capability"), f"{{{wfs}}}Request")

    def dcp(parent: Any) -> None:
        for method, url in (("Get", b.url + "?"), ("Post", b.url)):
            _el(_el(_el(parent, f"{{{wfs}}}DCPType"), f"{{{wfs}}}HTTP"), f"{{{wfs}}}{method}",
                onlineResource=url)

    dcp(_el(request, f"{{{wfs}}}GetCapabilities"))
    describe = _el(request, f"{{{wfs}}}DescribeFeatureType")
    _el(_el(describe, f"{{{wfs}}}SchemaDescriptionLanguage"), f"{{{wfs}}}XMLSCHEMA")
    dcp(describe)
    get_feature = _el(request, f"{{{wfs}}}GetFeature")
    result = _el(get_feature, f"{{{wfs}}}ResultFormat")
    for name in ("GML2", "GML3", "SHAPE-ZIP", "CSV", "JSON", "EXCEL", "KML"):
        _el(result, f"{{{wfs}}}{name}")
    dcp(get_feature)
    types = _el(root, f"{{{wfs}}}FeatureTypeList")
    _el(_el(types, f"{{{wfs}}}Operations"), f"{{{wfs}}}Query")
    for info in b.types:
        ft = _el(types, f"{{{wfs}}}FeatureType")
        _el(ft, f"{{{wfs}}}Name", info.qname)
        _el(ft, f"{{{wfs}}}Title", info.resource.title or info.name)
        _el(ft, f"{{{wfs}}}Abstract", info.resource.abstract or "")
        _el(ft, f"{{{wfs}}}Keywords", ", ".join(info.keywords))
        _el(ft, f"{{{wfs}}}SRS", f"EPSG:{info.epsg}")
        minx, miny, maxx, maxy = _ll(info)
        _el(ft, f"{{{wfs}}}LatLongBoundingBox", minx=_num(minx), miny=_num(miny), maxx=_num(maxx),
            maxy=_num(maxy))
    caps = _el(root, f"{{{ogc}}}Filter_Capabilities")
    spatial = _el(_el(caps, f"{{{ogc}}}Spatial_Capabilities"), f"{{{ogc}}}Spatial_Operators")
    for op in ("BBOX", "Equals", "Disjoint", "Intersect", "Touches", "Crosses", "Within", "Contains",
               "Overlaps", "DWithin", "Beyond"):
        _el(spatial, f"{{{ogc}}}{op}")
    scalar = _el(caps, f"{{{ogc}}}Scalar_Capabilities")
    _el(scalar, f"{{{ogc}}}Logical_Operators")
    comparisons = _el(scalar, f"{{{ogc}}}Comparison_Operators")
    for op in ("Simple_Comparisons", "Between", "Like", "NullCheck"):
        _el(comparisons, f"{{{ogc}}}{op}")
    _el(_el(scalar, f"{{{ogc}}}Arithmetic_Operators"), f"{{{ogc}}}Simple_Arithmetic")
    return root


def capabilities_document(req: OWSRequest, version: str, types: list[FeatureTypeInfo]) -> bytes:
    builder = _Builder(req, version, types)
    build = {"2.0.0": _capabilities_20, "1.1.0": _capabilities_11}.get(version, _capabilities_10)
    return etree.tostring(build(builder), xml_declaration=True, encoding="UTF-8")
