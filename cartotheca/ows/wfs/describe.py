"""cartotheca.ows.wfs.describe: DescribeFeatureType, the XML schema of feature types built
from their stored attributes."""

from __future__ import annotations

from typing import Any

from lxml import etree

from cartotheca import xmlsafe
from cartotheca.ows import gml
from cartotheca.ows.request import OWSRequest
from cartotheca.ows.wfs.feature_types import FeatureTypeInfo, namespace_uri

XSD = "http://www.w3.org/2001/XMLSchema"

GML3_GEOMETRY_TYPES = {
    "Point": "PointPropertyType", "LineString": "CurvePropertyType", "Polygon": "SurfacePropertyType",
    "MultiPoint": "MultiPointPropertyType", "MultiLineString": "MultiCurvePropertyType",
    "MultiPolygon": "MultiSurfacePropertyType",
}
GML2_GEOMETRY_TYPES = {
    "Point": "PointPropertyType", "LineString": "LineStringPropertyType",
    "Polygon": "PolygonPropertyType", "MultiPoint": "MultiPointPropertyType",
    "MultiLineString": "MultiLineStringPropertyType", "MultiPolygon": "MultiPolygonPropertyType",
}
SCHEMAS = {
    "2.0.0": (gml.GML32_NS, "http://schemas.opengis.net/gml/3.2.1/gml.xsd"),
    "1.1.0": (gml.GML2_NS, "http://schemas.opengis.net/gml/3.1.1/base/gml.xsd"),
    "1.0.0": (gml.GML2_NS, "http://schemas.opengis.net/gml/2.1.2/feature.xsd"),
}


def schema_media_type(version: str) -> str:
    return {"2.0.0": "application/gml+xml; version=3.2", "1.1.0": "text/xml; subtype=gml/3.1.1"}.get(
        version, "text/xml")


def _el(parent: Any, tag: str, **attrs: str) -> Any:
    return xmlsafe.sub_element(parent, tag, None, attrs)


def describe_feature_type(req: OWSRequest, version: str, types: list[FeatureTypeInfo]) -> bytes:
    """An XML schema of the feature types (one target namespace: the first type's workspace)."""
    gml_ns, gml_xsd = SCHEMAS[version]
    workspace = types[0].workspace if types else req.settings.DEFAULT_WORKSPACE
    target = namespace_uri(req, workspace)
    root = etree.Element(f"{{{XSD}}}schema", nsmap={"xsd": XSD, "gml": gml_ns, workspace: target},
                         elementFormDefault="qualified", targetNamespace=target)
    _el(root, f"{{{XSD}}}import", namespace=gml_ns, schemaLocation=gml_xsd)
    geometry_types = GML2_GEOMETRY_TYPES if version == "1.0.0" else GML3_GEOMETRY_TYPES
    for info in (t for t in types if t.workspace == workspace):
        complex_type = _el(root, f"{{{XSD}}}complexType", name=f"{info.name}Type")
        extension = _el(_el(complex_type, f"{{{XSD}}}complexContent"), f"{{{XSD}}}extension",
                        base="gml:AbstractFeatureType")
        sequence = _el(extension, f"{{{XSD}}}sequence")
        geometry = geometry_types.get(info.dataset.geometry_type or "", "GeometryPropertyType")
        _el(sequence, f"{{{XSD}}}element", maxOccurs="1", minOccurs="0", name=info.geometry_name,
            nillable="true", type=f"gml:{geometry}")
        for f in info.fields:
            _el(sequence, f"{{{XSD}}}element", maxOccurs="1", minOccurs="0", name=f.name,
                nillable="true", type=f.type if ":" in f.type else f"xsd:{f.type}")
        substitution = "gml:AbstractFeature" if version == "2.0.0" else "gml:_Feature"
        _el(root, f"{{{XSD}}}element", name=info.name, substitutionGroup=substitution,
            type=f"{workspace}:{info.name}Type")
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8")
