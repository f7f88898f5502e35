"""cartotheca.ows: the built-in map server (WMS, WFS, WCS, WMTS, XYZ and vector tiles)."""
