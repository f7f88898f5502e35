"""cartotheca.styling: SLD styles for mapnik: the SLD model and parser, symbolizers, marker
files and the default style of a new dataset. Imports neither ``ows`` nor ``catalogue``."""
