"""OGC filters compiled to store queries, run on real stored datasets (GeoPackage and PostGIS).

The ``points`` fixture: point i (0-based) at lon -10 + 2i, lat 40 + i, id i + 1, name
"point <i+1>", value 1.5 i, category "abc"[i % 3], observed 2024-01-(1 + i).
"""

from __future__ import annotations

import pytest
from pyproj import CRS, Transformer

from cartotheca import xmlsafe
from cartotheca.db.models import Dataset
from cartotheca.errors import InvalidFilter
from cartotheca.filters import parse, sql, values
from cartotheca.geodata.export import dataset_fields
from cartotheca.geodata.storage import FeatureQuery, stored_layer
from cartotheca.geodata.storage.stores import vector_store
from cartotheca.ows.crs import parse_srs

ALL = list(range(1, 11))
FES20 = 'xmlns:fes="http://www.opengis.net/fes/2.0" xmlns:gml="http://www.opengis.net/gml/3.2"'
OGC = 'xmlns:ogc="http://www.opengis.net/ogc" xmlns:gml="http://www.opengis.net/gml"'


def _layer(db, settings, resource, default_srs: str | None = None):
    dataset = db.get(Dataset, resource.id)
    store = vector_store(settings, dataset.storage)
    stored = stored_layer(dataset)

    def spatial_fids(mask, bbox):
        return list(store.query(stored, FeatureQuery(bbox=bbox, geometry_predicate=mask, properties=[])).fids)

    layer = sql.FilterLayer(
        table=store.table(stored), geometry_column=dataset.geometry_column, fid_column=dataset.fid_column,
        type_name=dataset.name, native_crs=CRS.from_epsg(dataset.native_srid), parse_srs=parse_srs,
        default_srs=parse_srs(default_srs) if default_srs else None, spatial_fids=spatial_fids,
        field_types={f.name: f.type for f in dataset_fields(db, dataset)})
    return store, stored, layer


def select(db, settings, resource, node, key: str = "id", default_srs: str | None = None) -> list:
    store, stored, layer = _layer(db, settings, resource, default_srs)
    selection = sql.compile_filter(node, layer)
    query = FeatureQuery(bbox=selection.bbox, where=selection.where, fids=selection.fids,
                         geometry_predicate=selection.geometry_predicate, properties=[key])
    found = sorted(store.query(stored, query).properties[key])
    assert store.count(stored, query) == len(found)
    return found


def cql(db, settings, resource, text, key="id"):
    return select(db, settings, resource, parse.parse_cql(text), key)


def fes(db, settings, resource, text, key="id", default_srs=None):
    return select(db, settings, resource, parse.parse_fes(xmlsafe.parse(text)), key, default_srs)


@pytest.mark.parametrize(("text", "expected"), [
    ("name = 'point 3'", [3]),
    ("name <> 'point 3'", [i for i in ALL if i != 3]),
    ("value < 3", [1, 2]),
    ("value >= 12", [9, 10]),
    ("id > 8", [9, 10]),
    ("name LIKE 'point 1%'", [1, 10]),
    ("name LIKE 'POINT 1%'", []),  # LIKE respects case on SQLite too
    ("name ILIKE 'POINT 1%'", [1, 10]),
    ("name LIKE 'point _'", list(range(1, 10))),
    ("name NOT LIKE 'point _'", [10]),
    ("category IN ('a', 'c')", [1, 3, 4, 6, 7, 9, 10]),
    ("value BETWEEN 3 AND 6", [3, 4, 5]),
    ("category = 'a' AND value > 5", [7, 10]),
    ("category = 'b' OR id = 1", [1, 2, 5, 8]),
    ("NOT category = 'a'", [2, 3, 5, 6, 8, 9]),
    ("value IS NULL", []),
    ("value IS NOT NULL", ALL),
    ("observed = '2024-01-02'", [2]),
    ("observed AFTER 2024-01-08T00:00:00Z", [9, 10]),
    ("observed BEFORE 2024-01-03T00:00:00Z", [1, 2]),
    ("observed DURING 2024-01-02T00:00:00Z/2024-01-04T12:00:00Z", [3, 4]),
    ("BBOX(geom, -9, 40, 0, 45)", [2, 3, 4, 5, 6]),
    ("BBOX(geom, 40, -9, 45, 0, 'urn:ogc:def:crs:EPSG::4326')", [2, 3, 4, 5, 6]),
    ("BBOX(geom, -1001875, 4865942, 0, 5622000, 'EPSG:3857')", [2, 3, 4, 5, 6]),
    ("INTERSECTS(geom, POLYGON((-11 39, -5 39, -5 44, -11 44, -11 39)))", [1, 2, 3]),
    ("DISJOINT(geom, POLYGON((-11 39, -7 39, -7 43, -11 43, -11 39)))", list(range(3, 11))),
    ("WITHIN(geom, POLYGON((-11 39, -7 39, -7 43, -11 43, -11 39)))", [1, 2]),
    ("DWITHIN(geom, POINT(-10 40), 300, kilometers)", [1, 2]),
    ("DWITHIN(geom, POINT(-10 40), 300000, meters)", [1, 2]),
    ("BEYOND(geom, POINT(-10 40), 300, kilometers)", list(range(3, 11))),
    ("INTERSECTS(geom, SRID=3857;POLYGON((-700000 5100000, -600000 5100000, -600000 5200000, "
     "-700000 5200000, -700000 5100000)))", [3]),
    ("category = 'a' OR INTERSECTS(geom, POLYGON((-11 39, -7 39, -7 43, -11 43, -11 39)))",
     [1, 2, 4, 7, 10]),
    ("NOT INTERSECTS(geom, POLYGON((-11 39, -7 39, -7 43, -11 43, -11 39)))", list(range(3, 11))),
    ("INCLUDE", ALL),
    ("EXCLUDE", []),
])
def test_cql_selects_exactly(db, settings, points, text, expected):
    assert cql(db, settings, points, text) == expected


def test_polygon_relations(db, settings, polygons):
    assert cql(db, settings, polygons, "CONTAINS(geom, POINT(5 45))", "name") == ["centre", "south-west"]
    assert cql(db, settings, polygons, "WITHIN(geom, POLYGON((-1 39, 21 39, 21 51, -1 51, -1 39)))",
               "name") == ["centre", "south-east", "south-west"]
    assert cql(db, settings, polygons, "TOUCHES(geom, LINESTRING(10 30, 10 70))", "name") == [
        "north-east", "north-west", "south-east", "south-west"]
    assert cql(db, settings, polygons, "rank > 2 AND INTERSECTS(geom, POINT(15 55))", "name") == []
    assert cql(db, settings, polygons, "rank >= 2 AND INTERSECTS(geom, POINT(15 55))", "name") == [
        "north-east"]


def test_feature_ids_in_cql_and_fes(db, settings, points):
    store, stored, _ = _layer(db, settings, points)
    rows = store.query(stored, FeatureQuery(properties=["id"]))
    fid_of = dict(zip(rows.properties["id"], rows.fids, strict=True))
    name = points.alternate.split(":")[1]
    assert cql(db, settings, points, f"IN ('{name}.{fid_of[2]}', '{name}.{fid_of[5]}')") == [2, 5]
    xml = (f'<fes:Filter {FES20}><fes:ResourceId rid="{name}.{fid_of[4]}"/>'
           f'<fes:ResourceId rid="other.{fid_of[6]}"/></fes:Filter>')
    assert fes(db, settings, points, xml) == [4]
    legacy = f'<ogc:Filter {OGC}><ogc:FeatureId fid="{points.alternate}.{fid_of[7]}"/></ogc:Filter>'
    assert fes(db, settings, points, legacy) == [7]


def test_fes20_operators(db, settings, points):
    during = (f'<fes:Filter {FES20}><fes:During><fes:ValueReference>observed</fes:ValueReference>'
              '<gml:TimePeriod gml:id="t"><gml:beginPosition>2024-01-05T00:00:00Z</gml:beginPosition>'
              "<gml:endPosition>2024-01-07T12:00:00Z</gml:endPosition></gml:TimePeriod></fes:During>"
              "</fes:Filter>")
    assert fes(db, settings, points, during) == [6, 7]
    nocase = (f'<fes:Filter {FES20}><fes:PropertyIsEqualTo matchCase="false">'
              "<fes:ValueReference>name</fes:ValueReference><fes:Literal>POINT 4</fes:Literal>"
              "</fes:PropertyIsEqualTo></fes:Filter>")
    assert fes(db, settings, points, nocase) == [4]
    between = (f'<fes:Filter {FES20}><fes:Not><fes:PropertyIsBetween>'
               "<fes:ValueReference>value</fes:ValueReference>"
               "<fes:LowerBoundary><fes:Literal>1</fes:Literal></fes:LowerBoundary>"
               "<fes:UpperBoundary><fes:Literal>12</fes:Literal></fes:UpperBoundary>"
               "</fes:PropertyIsBetween></fes:Not></fes:Filter>")
    assert fes(db, settings, points, between) == [1, 10]
    # Envelope without srsName: the query's CRS (here lat/lon) applies.
    bbox = (f'<fes:Filter {FES20}><fes:BBOX><fes:ValueReference>geom</fes:ValueReference>'
            "<gml:Envelope><gml:lowerCorner>44 -3</gml:lowerCorner><gml:upperCorner>50 20"
            "</gml:upperCorner></gml:Envelope></fes:BBOX></fes:Filter>")
    assert fes(db, settings, points, bbox, default_srs="urn:ogc:def:crs:EPSG::4326") == [5, 6, 7, 8, 9, 10]


def test_fes11_and_gml2_operands(db, settings, points):
    box = (f'<ogc:Filter {OGC}><ogc:Within><ogc:PropertyName>the_geom</ogc:PropertyName>'
           '<gml:Box srsName="EPSG:4326"><gml:coordinates>-9,40 0,45</gml:coordinates></gml:Box>'
           "</ogc:Within></ogc:Filter>")
    assert fes(db, settings, points, box) == [2, 3, 4, 5]
    polygon = (f'<ogc:Filter {OGC}><ogc:Intersects><ogc:PropertyName>geom</ogc:PropertyName>'
               '<gml:Polygon srsName="http://www.opengis.net/gml/srs/epsg.xml#4326"><gml:outerBoundaryIs>'
               "<gml:LinearRing><gml:coordinates>-11,39 -7,39 -7,43 -11,43 -11,39</gml:coordinates>"
               "</gml:LinearRing></gml:outerBoundaryIs></gml:Polygon></ogc:Intersects></ogc:Filter>")
    assert fes(db, settings, points, polygon) == [1, 2]
    like = (f'<ogc:Filter {OGC}><ogc:PropertyIsLike wildCard="*" singleChar="#" escape="!">'
            "<ogc:PropertyName>name</ogc:PropertyName><ogc:Literal>point #</ogc:Literal>"
            "</ogc:PropertyIsLike></ogc:Filter>")
    assert fes(db, settings, points, like) == list(range(1, 10))
    distance = (f'<ogc:Filter {OGC}><ogc:DWithin><ogc:PropertyName>geom</ogc:PropertyName>'
                '<gml:Point srsName="EPSG:3857"><gml:coordinates>-1113194.9,4865942.3</gml:coordinates>'
                '</gml:Point><ogc:Distance units="m">1000</ogc:Distance></ogc:DWithin></ogc:Filter>')
    to_merc = Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True)
    x, y = to_merc.transform(-10, 40)
    distance = distance.replace("-1113194.9,4865942.3", f"{x + 300},{y}")
    assert fes(db, settings, points, distance) == [1]


def test_values_are_bound_not_pasted(db, settings, points):
    hostile = (f'<ogc:Filter {OGC}><ogc:PropertyIsEqualTo><ogc:PropertyName>name</ogc:PropertyName>'
               "<ogc:Literal>x' OR '1'='1</ogc:Literal></ogc:PropertyIsEqualTo></ogc:Filter>")
    assert fes(db, settings, points, hostile) == []


@pytest.mark.parametrize("text", [
    "nothing = 3",  # unknown property
    "value = 'many'",  # not a number
    "strSubstring(name, 1, 2) = 'po'",  # unsupported function
    "name = ",
])
def test_invalid_filters_are_invalid_parameter_values(db, settings, points, text):
    with pytest.raises(InvalidFilter) as caught:
        cql(db, settings, points, text)
    assert caught.value.ogc_code == "InvalidParameterValue" and caught.value.ogc_locator == "filter"


def test_like_patterns():
    assert values.like_pattern("a*b?c!*", "*", "?", "!") == "a%b_c*"
    assert values.like_pattern("100%_x", "*", "?", "!") == "100\\%\\_x"
    assert values._glob_pattern("a%b_c\\%[") == "a*b?c%[[]"
