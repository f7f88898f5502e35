"""cartotheca.ows.wfs.formats: GetFeature output formats, their aliases and media types."""

from __future__ import annotations

import re

from cartotheca.errors import OWSException
from cartotheca.ows import gml
from cartotheca.ows.request import OWSRequest

FORMATS = {
    "gml32": ("application/gml+xml; version=3.2", "text/xml; subtype=gml/3.2", "gml32",
              "text/xml; subtype=gml/3.2.1", "application/gml+xml;version=3.2"),
    "gml31": ("text/xml; subtype=gml/3.1.1", "gml3", "application/gml+xml; version=3.1",
              "text/xml; subtype=gml/3.1.1/profiles/gmlsf/0"),
    "gml2": ("text/xml; subtype=gml/2.1.2", "GML2", "gml2", "application/gml+xml; version=2.1"),
    "json": ("application/json", "json", "geojson", "application/geo+json"),
    "csv": ("csv", "text/csv"),
    "excel": ("excel", "excel2007", "xlsx",
              "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
    "shape": ("SHAPE-ZIP", "application/zip", "shapezip"),
    "kml": ("application/vnd.google-earth.kml+xml", "KML", "application/vnd.google-earth.kml"),
}
DEFAULT_FORMAT = {"2.0.0": "gml32", "1.1.0": "gml31", "1.0.0": "gml2"}
GML_VERSIONS = {"gml2": gml.GML2, "gml31": gml.GML31, "gml32": gml.GML32}


def _format_key(text: str) -> str:
    return re.sub(r"\s+", "", text.lower().replace("gml xml", "gml+xml"))


_FORMAT_LOOKUP = {_format_key(alias): key for key, aliases in FORMATS.items() for alias in aliases}


def output_format(req: OWSRequest, version: str, text: str | None) -> str:
    if not text or _format_key(text) in ("text/xml", "application/xml", "xml"):
        return DEFAULT_FORMAT[version]
    key = _FORMAT_LOOKUP.get(_format_key(text))
    if key is None:
        raise OWSException("InvalidParameterValue", f"Unknown output format {text}",
                           locator="outputFormat")
    return key


def advertised_formats(version: str) -> list[str]:
    """Output formats for capabilities: the version's GML first, then the others."""
    gmls = [FORMATS[DEFAULT_FORMAT[version]][0]] + [FORMATS[k][0] for k in ("gml32", "gml31", "gml2")
                                                    if k != DEFAULT_FORMAT[version]]
    return [*gmls, "GML2", "gml3", "gml32", "application/json", "csv", "excel", "excel2007",
            "SHAPE-ZIP", "application/vnd.google-earth.kml+xml", "KML"]



def gml_media(version: str) -> str:
    return {gml.GML32: "application/gml+xml; version=3.2", gml.GML31: "text/xml; subtype=gml/3.1.1",
            gml.GML2: "text/xml; subtype=gml/2.1.2"}[version]
