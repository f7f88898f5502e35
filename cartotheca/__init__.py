"""Cartotheca: a geospatial catalogue and publishing service speaking the GeoNode REST API v2."""

__version__ = "0.1.0"
