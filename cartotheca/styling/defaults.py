"""cartotheca.styling.defaults: the default style of a new dataset.

A new vector dataset gets a simple SLD per geometry type (GeoServer's habit: a circle marker for
points, a line for lines, a fill with an outline for polygons) in a colour taken from its name,
so neighbouring layers differ but a layer keeps its colour. Rasters are drawn as they are (RGB)
or as a grey ramp between their band's minimum and maximum.
"""

from __future__ import annotations

import hashlib
from typing import Any

from cartotheca.xmlsafe import escape, quoteattr

# Colour-blind-friendly qualitative palette (Okabe & Ito), outlines one shade darker.
PALETTE = [("#0072B2", "#004c78"), ("#E69F00", "#9a6a00"), ("#009E73", "#006a4d"),
           ("#CC79A7", "#8c4d72"), ("#56B4E9", "#2d7aa6"), ("#D55E00", "#8f3f00"),
           ("#F0E442", "#a09817"), ("#999999", "#555555")]

SLD_HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<StyledLayerDescriptor version="1.0.0" xmlns="http://www.opengis.net/sld" '
    'xmlns:ogc="http://www.opengis.net/ogc" xmlns:xlink="http://www.w3.org/1999/xlink" '
    'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
    'xsi:schemaLocation="http://www.opengis.net/sld '
    'http://schemas.opengis.net/sld/1.0.0/StyledLayerDescriptor.xsd">'
)


def default_sld(name: str, kind: str, geometry_type: str | None,
                raster_info: dict[str, Any] | None = None) -> str:
    """A sensible SLD 1.0 for a new dataset called ``name`` (kind "vector" | "raster")."""
    if kind == "raster":
        symbolizer = _raster_symbolizer(raster_info or {})
        title = "Raster"
    else:
        fill, stroke = PALETTE[int(hashlib.sha1(name.encode()).hexdigest(), 16) % len(PALETTE)]
        symbolizer, title = _vector_symbolizer((geometry_type or "").lower(), fill, stroke)
    return (
        f"{SLD_HEAD}<NamedLayer><Name>{escape(name)}</Name><UserStyle>"
        f"<Name>{escape(name)}</Name><Title>{escape(name)}</Title><IsDefault>1</IsDefault>"
        f"<FeatureTypeStyle><Rule><Name>{escape(title)}</Name><Title>{escape(title)}</Title>"
        f"{symbolizer}</Rule></FeatureTypeStyle></UserStyle></NamedLayer></StyledLayerDescriptor>\n"
    )


def _vector_symbolizer(geometry_type: str, fill: str, stroke: str) -> tuple[str, str]:
    if "point" in geometry_type:
        return (
            "<PointSymbolizer><Graphic><Mark><WellKnownName>circle</WellKnownName>"
            f'<Fill><CssParameter name="fill">{fill}</CssParameter></Fill>'
            f'<Stroke><CssParameter name="stroke">{stroke}</CssParameter>'
            '<CssParameter name="stroke-width">1</CssParameter></Stroke>'
            "</Mark><Size>8</Size></Graphic></PointSymbolizer>", "Point")
    if "line" in geometry_type or "curve" in geometry_type:
        return (
            f'<LineSymbolizer><Stroke><CssParameter name="stroke">{fill}</CssParameter>'
            '<CssParameter name="stroke-width">1.5</CssParameter></Stroke></LineSymbolizer>', "Line")
    polygon = (
        f'<PolygonSymbolizer><Fill><CssParameter name="fill">{fill}</CssParameter>'
        '<CssParameter name="fill-opacity">0.7</CssParameter></Fill>'
        f'<Stroke><CssParameter name="stroke">{stroke}</CssParameter>'
        '<CssParameter name="stroke-width">0.5</CssParameter></Stroke></PolygonSymbolizer>'
    )
    if "polygon" in geometry_type or "surface" in geometry_type:
        return polygon, "Polygon"
    # Unknown or mixed geometries: draw whatever comes (polygon, line and point rules all apply
    # to the geometry type mapnik finds).
    return polygon + (
        "<PointSymbolizer><Graphic><Mark><WellKnownName>circle</WellKnownName>"
        f'<Fill><CssParameter name="fill">{fill}</CssParameter></Fill></Mark><Size>6</Size>'
        "</Graphic></PointSymbolizer>"), "Feature"


def _raster_symbolizer(info: dict[str, Any]) -> str:
    bands = _band_count(info)
    if bands >= 3 and str(info.get("dtype", "uint8")).lower() == "uint8":
        return "<RasterSymbolizer><Opacity>1.0</Opacity></RasterSymbolizer>"
    low, high = _band_range(info)
    return (
        "<RasterSymbolizer><Opacity>1.0</Opacity>"
        "<ChannelSelection><GrayChannel><SourceChannelName>1</SourceChannelName></GrayChannel>"
        '</ChannelSelection><ColorMap type="ramp">'
        f'<ColorMapEntry color="#000000" quantity={quoteattr(repr(low))} label={quoteattr(_label(low))}/>'
        f'<ColorMapEntry color="#ffffff" quantity={quoteattr(repr(high))} label={quoteattr(_label(high))}/>'
        "</ColorMap></RasterSymbolizer>"
    )


def _band_count(info: dict[str, Any]) -> int:
    bands = info.get("bands", info.get("count", 1))
    if isinstance(bands, list):
        return len(bands)
    try:
        return int(bands)
    except (TypeError, ValueError):
        return 1


def _band_range(info: dict[str, Any]) -> tuple[float, float]:
    """8-bit bands show their values as they are; other types stretch between the first band's
    min and max from the statistics ingest recorded, else the dtype's range."""
    if str(info.get("dtype", "")).lower() == "uint8":
        return 0.0, 255.0
    candidates = []
    for key in ("bands", "statistics", "stats", "band_statistics"):
        value = info.get(key)
        if isinstance(value, list) and value and isinstance(value[0], dict):
            candidates.append(value[0])
        elif isinstance(value, dict):
            candidates.append(value.get("1") or value.get("b1") or value)
    candidates.append(info)
    for stats in candidates:
        low, high = stats.get("min"), stats.get("max")
        try:
            low, high = float(low), float(high)
        except (TypeError, ValueError):
            continue
        if high > low:
            return low, high
    dtype = str(info.get("dtype", "uint8")).lower()
    return {"uint8": (0.0, 255.0), "int8": (-128.0, 127.0), "uint16": (0.0, 65535.0),
            "int16": (-32768.0, 32767.0)}.get(dtype, (0.0, 255.0))


def _label(value: float) -> str:
    return f"{value:.6g}"
