"""Datasets published through the real ingest, and helpers to ask WMS and read its exception reports."""

from __future__ import annotations

import pytest
from lxml import etree
from sqlalchemy import delete

from cartotheca.catalogue.accounts import internal_group_ids
from cartotheca.db.models import ResourcePermission
from tests.factories import make_user
from tests.geodata.fixtures import (
    polygons_sld,
    publish_file,
    write_points,
    write_polygons,
    write_raster,
)

# Points drawn as 10 px red squares, so each one is found by its pixels.
RED_SQUARES_SLD = (
    '<StyledLayerDescriptor version="1.0.0" xmlns="http://www.opengis.net/sld" '
    'xmlns:ogc="http://www.opengis.net/ogc"><NamedLayer><Name>points</Name><UserStyle>'
    "<Name>red_squares</Name><FeatureTypeStyle><Rule><Name>all</Name><Title>Observation</Title>"
    "<PointSymbolizer><Graphic><Mark><WellKnownName>square</WellKnownName><Fill>"
    '<CssParameter name="fill">#ff0000</CssParameter></Fill></Mark><Size>10</Size></Graphic>'
    "</PointSymbolizer></Rule></FeatureTypeStyle></UserStyle></NamedLayer></StyledLayerDescriptor>"
)


@pytest.fixture
def owner(db):
    return make_user(db)


@pytest.fixture
def polygons(db, settings, owner, tmp_path):
    """The fixtures' five coloured squares (lon 0..20, lat 40..60), styled by their colour."""
    return publish_file(db, settings, owner, write_polygons(tmp_path), title="Polygons",
                        sld=polygons_sld())


@pytest.fixture
def points(db, settings, owner, tmp_path):
    """Ten time-enabled points: point i at (-10 + 2i, 40 + i) observed on 2024-01-(1 + i)."""
    return publish_file(db, settings, owner, write_points(tmp_path), title="Observations",
                        time=True, sld=RED_SQUARES_SLD)


@pytest.fixture
def raster(db, settings, owner, tmp_path):
    """64x48 single-band bytes over lon 0..16, lat 40..52; pixel (row, col) = (row + 2 col) % 251."""
    return publish_file(db, settings, owner, write_raster(tmp_path), title="Raster")


def make_private(db, settings, resource) -> None:
    """Only the owner (and administrators) may see the resource from now on."""
    public_groups = internal_group_ids(db, settings)
    db.execute(delete(ResourcePermission).where(ResourcePermission.resource_id == resource.id,
                                                ResourcePermission.group_id.in_(public_groups)))
    db.commit()


def wms(client, headers=None, **params):
    query = {"SERVICE": "WMS", **{k.upper(): v for k, v in params.items()}}
    return client.get("/ows", params=query, headers=headers or {})


def exception_code(response) -> str:
    assert response.status_code == 200, response.text
    root = etree.fromstring(response.content)
    assert etree.QName(root).localname == "ServiceExceptionReport", response.text
    return root[0].get("code")
