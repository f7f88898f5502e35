"""cartotheca.filters: OGC filters read once into one AST, compiled by one back end per target.

``parse`` reads FES 1.0/1.1/2.0 XML and CQL text into pygeofilter's AST; ``sql`` compiles it
to an SQLAlchemy query over a layer's table (WFS); ``mapnik`` to a mapnik expression (SLD
rules). Errors are ``cartotheca.errors.InvalidFilter``.
"""
