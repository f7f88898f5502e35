"""bench.geodata.mapserver: the MapServer 8 mapfile and config file the WMS comparison uses.

Both are written at run time into a scratch directory, pointing at the very data Cartotheca
serves (the GeoPackage its store wrote, or the table in the PostGIS datastore), with the same
style as the SLD given to Cartotheca: polygons filled steel blue with a 1 px dark outline,
points as 6 px steel-blue circles with a 1 px outline. MapServer 8 refuses to start without a
config file (geodata-notes.md, trip-wire 7), which also whitelists the mapfile.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

FILL = (70, 130, 180)  # #4682b4
STROKE = (20, 40, 80)  # #142850
POINT_SIZE = 6


@dataclass
class MapLayer:
    """One WMS layer: its name, geometry kind and where MapServer reads it."""

    name: str
    kind: str  # "polygon" | "point"
    gpkg: Path | None = None  # GeoPackage file (OGR), or
    pg_conninfo: str | None = None  # libpq conninfo and
    pg_table: str | None = None  # schema.table with
    geometry_column: str = "geom"
    fid_column: str = "fid"
    gpkg_layer: str | None = None


def _rgb(c: tuple[int, int, int]) -> str:
    return " ".join(str(v) for v in c)


def _connection(layer: MapLayer) -> str:
    if layer.gpkg is not None:
        # OGR; connections pooled for the life of the FastCGI process (CLOSE_CONNECTION=DEFER).
        return (f'CONNECTIONTYPE OGR CONNECTION "{layer.gpkg}" DATA "{layer.gpkg_layer or layer.name}"\n'
                '    PROCESSING "CLOSE_CONNECTION=DEFER"')
    return (f'CONNECTIONTYPE POSTGIS CONNECTION "{layer.pg_conninfo}"\n'
            f'    DATA "{layer.geometry_column} from {layer.pg_table} using unique {layer.fid_column} '
            'using srid=4326"\n    PROCESSING "CLOSE_CONNECTION=DEFER"')


def _style(kind: str) -> str:
    if kind == "polygon":
        return f"STYLE COLOR {_rgb(FILL)} OUTLINECOLOR {_rgb(STROKE)} WIDTH 1 END"
    return (f'STYLE SYMBOL "circle" SIZE {POINT_SIZE} COLOR {_rgb(FILL)} '
            f"OUTLINECOLOR {_rgb(STROKE)} WIDTH 1 END")


def mapfile(layers: list[MapLayer], extent: tuple[float, float, float, float]) -> str:
    blocks = []
    for layer in layers:
        blocks.append(f"""  LAYER
    NAME "{layer.name}" TYPE {layer.kind.upper()} STATUS ON
    {_connection(layer)}
    PROJECTION "init=epsg:4326" END
    METADATA "ows_title" "{layer.name}" "ows_extent" "{' '.join(map(str, extent))}"
      "gml_include_items" "all" "gml_featureid" "{layer.fid_column}" END
    TEMPLATE "query.html"
    CLASS {_style(layer.kind)} END
  END""")
    body = "\n".join(blocks)
    return f"""MAP
  NAME "bench"
  EXTENT {' '.join(map(str, extent))}
  SIZE 256 256
  MAXSIZE 4096
  PROJECTION "init=epsg:4326" END
  IMAGECOLOR 255 255 255
  OUTPUTFORMAT NAME "png" DRIVER AGG/PNG MIMETYPE "image/png" IMAGEMODE RGBA EXTENSION "png" END
  SYMBOL NAME "circle" TYPE ELLIPSE FILLED TRUE POINTS 1 1 END END
  WEB METADATA "ows_title" "bench" "ows_onlineresource" "http://127.0.0.1/mapserv?map=BENCH"
    "ows_srs" "EPSG:4326 EPSG:3857" "ows_enable_request" "*" END END
{body}
END
"""


def write_config(workdir: Path, layers: list[MapLayer], extent: tuple[float, float, float, float]) -> Path:
    """Writes ``bench.map`` and ``mapserver.conf``; returns the config file's path (for
    MAPSERVER_CONFIG_FILE). Requests then name the map as ``map=BENCH``."""
    workdir.mkdir(parents=True, exist_ok=True)
    mappath = workdir / "bench.map"
    mappath.write_text(mapfile(layers, extent))
    conf = workdir / "mapserver.conf"
    conf.write_text(f"""CONFIG
  ENV MS_MAP_PATTERN "^{workdir}/" END
  MAPS BENCH "{mappath}" END
END
""")
    return conf
