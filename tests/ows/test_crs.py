"""CRS names as the OGC services read them: one reader, each service's spellings."""

from __future__ import annotations

import pytest

from cartotheca.errors import InvalidInput
from cartotheca.ows import coverage
from cartotheca.ows.crs import Srs, SrsError, parse_crs, parse_srs


def test_srs_names_and_axis_order():
    assert parse_srs("EPSG:4326") == Srs(4326, False, "EPSG:4326")
    assert parse_srs("urn:ogc:def:crs:EPSG::4326").swap
    assert parse_srs("urn:x-ogc:def:crs:EPSG:4326").swap
    assert parse_srs("http://www.opengis.net/def/crs/EPSG/0/4326").swap
    assert not parse_srs("http://www.opengis.net/gml/srs/epsg.xml#4326").swap
    assert not parse_srs("urn:ogc:def:crs:EPSG::3857").swap
    assert not parse_srs("urn:ogc:def:crs:OGC:1.3:CRS84").swap
    with pytest.raises(SrsError):
        parse_srs("EPSG:999999")


def test_wms_names():
    assert parse_crs("crs:83").code == "CRS:83" and parse_crs("CRS:83").srs == "epsg:4269"
    assert parse_crs("urn:ogc:def:crs:OGC:1.3:CRS84").code == "CRS:84"
    assert parse_crs("EPSG:4326").lat_first and parse_crs("urn:ogc:def:crs:EPSG::4326").lat_first
    assert parse_crs("EPSG:900913").code == "EPSG:3857"
    for name in ("OGC:CRS84", "http://www.opengis.net/gml/srs/epsg.xml#4326", "EPSG:999999"):
        with pytest.raises(InvalidInput):
            parse_crs(name)


def test_wcs_names():
    assert coverage.parse_crs("http://www.opengis.net/def/crs/EPSG/0/4326").y_first
    assert coverage.parse_crs("urn:ogc:def:crs:OGC::CRS84").uri.endswith("/CRS84")
    assert coverage.parse_crs("urn:ogc:def:crs:EPSG:6.6:3857").epsg == 3857
    for name in ("ogc:crs84", "CRS:83", "https://www.opengis.net/def/crs/EPSG/0/4326", "EPSG:x"):
        with pytest.raises(coverage.CRSError):
            coverage.parse_crs(name)
