"""cartotheca.filters: OGC filters read once into one AST, compiled by one back end per target.

``parse`` reads FES 1.0/1.1/2.0 XML and CQL text into pygeofilter's AST. Back ends: ``sql``
compiles it over a layer's features (WFS), ``columns`` over the record columns of the catalogue
(CSW queryables), ``mapnik`` to a mapnik expression (SLD rules). Errors are
``cartotheca.errors.InvalidFilter``.
"""
