"""cartotheca.ows.crs: CRS names as OGC clients write them → EPSG code and axis order.

One reader (``read_name``) for every service. The services do not accept the same spellings
(WMS knows OGC's ``CRS:83``, WFS GeoServer's ``gml/srs/epsg.xml#n``, WCS only the forms its
CRS extension lists), and clients rely on each service's answers, so each passes its own
``Spellings`` table; the tables below sit side by side so the differences are visible.

Axis order: a name's spelling says whether coordinates follow the EPSG definition's order
(the URN and ``opengis.net/def/crs`` forms, so ``urn:ogc:def:crs:EPSG::4326`` is lat/lon) or
are always x/y (``EPSG:n`` and ``gml/srs/epsg.xml#n``, GeoServer's rule, which WFS follows).
WMS 1.3.0 follows the EPSG definition for every spelling, and OGC's ``CRS:84`` family is
always lon/lat.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import pyproj

from cartotheca.errors import InvalidInput


@dataclass(frozen=True)
class Spellings:
    """The CRS names a service accepts."""

    lonlat: tuple[tuple[re.Pattern[str], int], ...]  # OGC lon/lat names → the EPSG code drawn
    epsg: tuple[tuple[re.Pattern[str], bool], ...]  # (pattern with a ``code`` group, EPSG order)


@dataclass(frozen=True)
class CRSName:
    """What a CRS name says."""

    epsg: int
    lonlat: bool  # one of OGC's lon/lat CRSs (CRS:84 ...): x/y whatever EPSG says
    authority_order: bool  # the spelling follows the EPSG definition's axis order


def read_name(text: str, spellings: Spellings) -> CRSName | None:
    """The CRS ``text`` names, or None when it is no spelling of ``spellings``."""
    text = text.strip()
    for pattern, epsg in spellings.lonlat:
        if pattern.match(text):
            return CRSName(epsg, True, False)
    for pattern, authority_order in spellings.epsg:
        match = pattern.match(text)
        if match:
            try:
                return CRSName(int(match.group("code")), False, authority_order)
            except ValueError:
                return None
    return None


@functools.lru_cache(maxsize=256)
def north_first(epsg: int) -> bool:
    """Whether the EPSG definition of the CRS lists the north(ing) axis first; pyproj's
    ``CRSError`` for an unknown code."""
    axes = pyproj.CRS.from_epsg(epsg).axis_info
    return bool(axes) and axes[0].direction.lower() in ("north", "south")


def _patterns(flags: int, *items: tuple[str, object]) -> tuple:
    return tuple((re.compile(pattern, flags), value) for pattern, value in items)


# WMS: OGC's lon/lat CRSs from WMS 1.3.0 annex B, and the EPSG URNs and URIs.
WMS = Spellings(
    lonlat=_patterns(re.IGNORECASE, (r"^CRS:84$", 4326), (r"^CRS:83$", 4269), (r"^CRS:27$", 4267),
                     (r"^urn:ogc:def:crs:OGC:1\.3:CRS84$", 4326),
                     (r"^http://www\.opengis\.net/def/crs/OGC/1\.3/CRS84$", 4326)),
    epsg=_patterns(re.IGNORECASE, (r"^urn:ogc:def:crs:EPSG:[\d.]*:(?P<code>\d+)$", True),
                   (r"^urn:x-ogc:def:crs:EPSG:[\d.]*:(?P<code>\d+)$", True),
                   (r"^https?://www\.opengis\.net/def/crs/EPSG/0/(?P<code>\d+)$", True),
                   (r"^EPSG:(?P<code>\d+)$", True)),
)
# WFS and the OGC filters (GML srsName): GeoServer's spellings.
WFS = Spellings(
    lonlat=_patterns(re.IGNORECASE, (r"^urn:ogc:def:crs:OGC:[^:]*:CRS84$", 4326),
                     (r"^https?://www\.opengis\.net/def/crs/OGC/[^/]+/CRS84$", 4326),
                     (r"^CRS:84$", 4326), (r"^OGC:CRS84$", 4326)),
    epsg=_patterns(re.IGNORECASE, (r"^EPSG:(?P<code>\d+)$", False),
                   (r"^https?://www\.opengis\.net/gml/srs/epsg\.xml#(?P<code>\d+)$", False),
                   (r"^urn:(?:x-)?ogc:def:crs:EPSG:[^:]*:(?P<code>\d+)$", True),
                   (r"^urn:x-ogc:def:crs:EPSG:(?P<code>\d+)$", True),
                   (r"^https?://www\.opengis\.net/def/crs/EPSG/[^/]+/(?P<code>\d+)$", True)),
)
# WCS (CRS extension): the CRS84 names exactly as written; for the EPSG forms whatever follows
# the last ":" after the prefix is the code.
WCS = Spellings(
    lonlat=_patterns(0, (r"^http://www\.opengis\.net/def/crs/OGC/1\.3/CRS84$", 4326),
                     (r"^urn:ogc:def:crs:OGC:1\.3:CRS84$", 4326), (r"^urn:ogc:def:crs:OGC::CRS84$", 4326),
                     (r"^OGC:CRS84$", 4326), (r"^CRS:84$", 4326)),
    epsg=_patterns(re.IGNORECASE | re.DOTALL,
                   (r"^(?:http://www\.opengis\.net/def/crs/EPSG/0/|http://www\.opengis\.net/def/crs/EPSG/0\.0/"
                    r"|urn:ogc:def:crs:EPSG:|EPSG:)(?:.*:)?(?P<code>[^:]*)$", True)),
)


# -- WMS ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CRSInfo:
    code: str  # "EPSG:4326"
    srs: str  # what mapnik reads
    lat_first: bool  # the CRS's own axis order starts with north (WMS 1.3.0 BBOX order)


EPSG_ALIASES = {900913: 3857, 3785: 3857, 102100: 3857, 102113: 3857}


@functools.lru_cache(maxsize=512)
def parse_crs(value: str) -> CRSInfo:
    """A CRS as WMS clients name it (EPSG:n, CRS:84, URNs); ``InvalidInput`` if unknown."""
    name = read_name(value, WMS)
    if name is None:
        raise InvalidInput(f"CRS {value!r} is not supported; use EPSG:<code>")
    if name.lonlat:
        text = value.strip().upper()
        return CRSInfo(code=text if text.startswith("CRS:") else "CRS:84",
                       srs=f"epsg:{name.epsg}", lat_first=False)
    epsg = EPSG_ALIASES.get(name.epsg, name.epsg)
    try:
        lat_first = north_first(epsg)
    except pyproj.exceptions.CRSError:
        raise InvalidInput(f"EPSG:{epsg} is not a known CRS") from None
    return CRSInfo(code=f"EPSG:{epsg}", srs=f"epsg:{epsg}", lat_first=lat_first)


# -- WFS and GML srsName -------------------------------------------------------------------------

@dataclass(frozen=True)
class Srs:
    """A parsed srsName: its EPSG code and whether coordinates are written north first."""

    epsg: int
    swap: bool  # True: coordinates are (y, x) in this naming (lat/lon for EPSG:4326)
    name: str

    @property
    def crs(self) -> str:
        return f"EPSG:{self.epsg}"


class SrsError(ValueError):
    pass


def parse_srs(name: str) -> Srs:
    """``EPSG:4326``, ``urn:ogc:def:crs:EPSG::4326``, ... → Srs (raises SrsError)."""
    text = name.strip()
    parsed = read_name(text, WFS)
    if parsed is None:
        raise SrsError(f"Unsupported CRS {name!r}")
    if parsed.lonlat:
        return Srs(4326, False, text)
    try:
        swap = north_first(parsed.epsg)  # also checks that the code exists
    except Exception as exc:  # pyproj raises CRSError for unknown codes
        raise SrsError(f"Unknown CRS EPSG:{parsed.epsg}") from exc
    return Srs(parsed.epsg, parsed.authority_order and swap, text)
