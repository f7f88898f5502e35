"""cartotheca.ows.coverage: the grid of a stored COG, and the output grid a WCS request asks of it.

A request is resolved to an output grid (CRS, transform, size) in three steps: the subset
(trims and slices, in the subsetting CRS or in grid coordinates) becomes a pixel window of the
working grid (the native grid, or GDAL's suggested grid in the output CRS), scaling resizes
that window, and ``coverage_geotiff`` reads the pixels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
import pyproj
import rasterio
from affine import Affine
from rasterio.crs import CRS
from rasterio.warp import calculate_default_transform, transform_bounds
from rasterio.windows import Window

from cartotheca.errors import InvalidInput
from cartotheca.ows import crs as crs_names

EPSG_URI = "http://www.opengis.net/def/crs/EPSG/0/"
X_ALIASES = {"x", "e", "east", "easting", "lon", "long", "longitude"}
Y_ALIASES = {"y", "n", "north", "northing", "lat", "latitude"}
GRID_AXES = {"i": 0, "j": 1}  # i: columns, j: rows
EPSILON = 1e-6  # pixel fractions this close to a pixel edge are on it (float noise)
RESAMPLING = {"nearest": "nearest", "nearest-neighbor": "nearest", "nearest-neighbour": "nearest",
              "linear": "bilinear", "bilinear": "bilinear", "cubic": "cubic", "bicubic": "cubic",
              "average": "average", "lost-area": "average"}
OGC_DATA_TYPES = {"uint8": "unsignedByte", "int8": "signedByte", "uint16": "unsignedShort",
                  "int16": "signedShort", "uint32": "unsignedInt", "int32": "signedInt",
                  "uint64": "unsignedLong", "int64": "signedLong", "float32": "float32",
                  "float64": "float64"}


class SubsetError(InvalidInput):
    """A trim or slice that is malformed or selects nothing."""

    ogc_code, ogc_locator = "InvalidSubsetting", "subset"


class AxisLabelError(InvalidInput):
    """An axis name the coverage does not have."""

    ogc_code, ogc_locator = "InvalidAxisLabel", "subset"


class CRSError(InvalidInput):
    """A CRS that is not an EPSG code."""

    ogc_locator = "crs"


# -- CRS ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CoverageCRS:
    """A CRS as WCS names it, with its axes in the CRS's own order."""

    epsg: int | None
    wkt: str = field(repr=False)
    uri: str
    labels: tuple[str, str]  # axis abbreviations, CRS order ("Lat", "Long" for EPSG:4326)
    units: tuple[str, str]
    y_first: bool  # the first axis is northing/latitude

    @property
    def rasterio(self) -> Any:
        return CRS.from_epsg(self.epsg) if self.epsg else CRS.from_wkt(self.wkt)

    def same_as(self, other: CoverageCRS) -> bool:
        if self.epsg and other.epsg:
            return self.epsg == other.epsg
        return pyproj.CRS.from_wkt(self.wkt).equals(pyproj.CRS.from_wkt(other.wkt))

    def xy(self, first: float, second: float) -> tuple[float, float]:
        """CRS-order coordinates → x/y order."""
        return (second, first) if self.y_first else (first, second)

    def ordered(self, x: float, y: float) -> tuple[float, float]:
        """x/y order → the CRS's order."""
        return (y, x) if self.y_first else (x, y)


@lru_cache(maxsize=256)
def _from_pyproj(key: str, crs84: bool) -> CoverageCRS:
    crs = pyproj.CRS.from_user_input(key)
    epsg = crs.to_epsg()
    axes = crs.axis_info[:2]
    labels = tuple("Long" if a.abbrev.lower() == "lon" else a.abbrev for a in axes)
    units = tuple("deg" if "degree" in a.unit_name else ("m" if a.unit_name == "metre" else a.unit_name)
                  for a in axes)
    y_first = bool(axes) and axes[0].direction.lower() in ("north", "south")
    uri = "http://www.opengis.net/def/crs/OGC/1.3/CRS84" if crs84 else \
        (f"{EPSG_URI}{epsg}" if epsg else crs.to_wkt())
    return CoverageCRS(4326 if crs84 else epsg, crs.to_wkt(), uri, labels, units, y_first)  # type: ignore[arg-type]


def crs_of_dataset(crs: Any) -> CoverageCRS:
    """The CRS of an open raster (a rasterio CRS)."""
    epsg = crs.to_epsg()
    return _from_pyproj(f"EPSG:{epsg}" if epsg else crs.to_wkt(), False)


def parse_crs(value: str) -> CoverageCRS:
    """A CRS URI (http://www.opengis.net/def/crs/EPSG/0/4326), URN or EPSG:n."""
    name = crs_names.read_name(value, crs_names.WCS)
    if name is None:
        raise CRSError(f"CRS {value!r} is not supported; use {EPSG_URI}<code>")
    if name.lonlat:
        return _from_pyproj("OGC:CRS84", True)
    try:
        return _from_pyproj(f"EPSG:{name.epsg}", False)
    except pyproj.exceptions.CRSError:
        raise CRSError(f"EPSG:{name.epsg} is not a known CRS") from None


# -- the coverage's grid -----------------------------------------------------------------------

@dataclass
class Grid:
    """A stored COG as WCS describes it."""

    crs: CoverageCRS
    transform: Any  # affine.Affine
    width: int
    height: int
    dtypes: list[str]
    nodata: float | None
    band_names: list[str]
    colorinterp: list[Any] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.dtypes)

    @property
    def bounds(self) -> tuple[float, float, float, float]:
        """(minx, miny, maxx, maxy), x/y order."""
        t = self.transform
        xs = (t.c, t.c + t.a * self.width)
        ys = (t.f, t.f + t.e * self.height)
        return min(xs), min(ys), max(xs), max(ys)


def read_grid(path: str, band_descriptions: list[str] | None = None) -> Grid:
    with rasterio.open(path) as src:
        return Grid(crs_of_dataset(src.crs), src.transform, src.width, src.height, list(src.dtypes),
                    src.nodata, band_names(band_descriptions or list(src.descriptions), src.count),
                    list(src.colorinterp))


def band_names(descriptions: list[str | None], count: int) -> list[str]:
    """Field names for the range type: the band descriptions when they make unique XML names,
    else band_1 .. band_n."""
    names = [(descriptions[i] if i < len(descriptions) else None) or "" for i in range(count)]
    usable = all(_is_ncname(n) for n in names) and len(set(names)) == count
    return names if usable else [f"band_{i + 1}" for i in range(count)]


def _is_ncname(name: str) -> bool:
    return bool(name) and (name[0].isalpha() or name[0] == "_") and \
        all(c.isalnum() or c in "_-." for c in name)


# -- a request -------------------------------------------------------------------------------

@dataclass
class Subset:
    """One trim (low/high, either open as None) or slice (point) on a named axis."""

    axis: str
    low: float | None = None
    high: float | None = None
    point: float | None = None
    crs: str | None = None  # WCS 2.0.0 KVP put the CRS inside the subset


@dataclass
class Scaling:
    factor: float | None = None
    axis_factors: dict[str, float] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    extents: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def requested(self) -> bool:
        return bool(self.factor is not None or self.axis_factors or self.sizes or self.extents)


@dataclass
class CoverageRequest:
    subsets: list[Subset] = field(default_factory=list)
    subsetting_crs: str | None = None
    output_crs: str | None = None
    scaling: Scaling = field(default_factory=Scaling)
    bands: list[str] | None = None  # range subset, as given
    interpolation: str | None = None


@dataclass
class OutputGrid:
    crs: CoverageCRS
    transform: Any
    width: int
    height: int
    indexes: list[int]
    window: Any | None  # the source window when pixels are copied as they are
    resampling: str


def axis_kind(label: str, crs: CoverageCRS) -> str:
    """'x', 'y', 'i' or 'j' for an axis label (or axis URI) in requests about ``crs``."""
    name = label.strip().rsplit("/", 1)[-1]
    lower = name.lower()
    if lower in GRID_AXES:
        return lower
    for index, advertised in enumerate(crs.labels):
        if lower == advertised.lower():
            return "y" if (index == 0) == crs.y_first else "x"
    if lower in X_ALIASES:
        return "x"
    if lower in Y_ALIASES:
        return "y"
    raise AxisLabelError(f"Axis {label!r} is not an axis of the coverage (use "
                         f"{' or '.join(crs.labels)}, or the grid axes i and j)")


def plan(grid: Grid, request: CoverageRequest, max_pixels: int) -> OutputGrid:
    native = grid.crs
    subsetting = parse_crs(request.subsetting_crs) if request.subsetting_crs else native
    inline = {s.crs for s in request.subsets if s.crs}
    if inline:
        if len(inline) > 1 or request.subsetting_crs:
            raise SubsetError("Give one subsetting CRS")
        subsetting = parse_crs(inline.pop())
    output = parse_crs(request.output_crs) if request.output_crs else subsetting
    indexes = band_indexes(grid, request.bands)
    resampling = _resampling(request.interpolation)
    if output.same_as(native):
        work_transform, work_width, work_height = grid.transform, grid.width, grid.height
        output = native
    else:
        work_transform, work_width, work_height = _suggested_grid(grid, output)
    window = _window(grid, request.subsets, subsetting, output, work_transform, work_width, work_height)
    col0, row0, col1, row1 = window
    transform = work_transform @ Affine.translation(col0, row0)
    width, height = col1 - col0, row1 - row0
    scaled_width, scaled_height = _scaled_size(request.scaling, width, height)
    rescaled = (scaled_width, scaled_height) != (width, height)
    if rescaled:
        transform = transform @ Affine.scale(width / scaled_width, height / scaled_height)
        width, height = scaled_width, scaled_height
    if width * height * len(indexes) > max_pixels:
        raise InvalidInput(f"The coverage asked for ({width} x {height} pixels, {len(indexes)} bands) is "
                           f"larger than this server gives at once; subset or scale it")
    direct = output is native and not rescaled  # the source's own pixels, copied as they are
    source_window = Window(col0, row0, col1 - col0, row1 - row0) if direct else None
    return OutputGrid(output, transform, width, height, indexes, source_window, resampling)


def _resampling(name: str | None) -> str:
    if not name:
        return "nearest"
    key = name.strip().rsplit("/", 1)[-1].lower()
    if key not in RESAMPLING:
        raise InvalidInput(f"Interpolation {name} is not supported (nearest-neighbor, linear, cubic)")
    return RESAMPLING[key]


def band_indexes(grid: Grid, bands: list[str] | None) -> list[int]:
    """1-based band indexes of a range subset: field names, 1-based numbers, or a:b intervals."""
    if not bands:
        return list(range(1, grid.count + 1))

    def index_of(name: str) -> int:
        name = name.strip()
        if name in grid.band_names:
            return grid.band_names.index(name) + 1
        if name.isdigit() and 1 <= int(name) <= grid.count:
            return int(name)
        raise InvalidInput(f"The coverage has no field {name!r} (fields: {', '.join(grid.band_names)})")

    indexes: list[int] = []
    for item in bands:
        if ":" in item:
            start, end = (index_of(part) for part in item.split(":", 1))
            if start > end:
                raise InvalidInput(f"Range interval {item} runs backwards")
            indexes.extend(range(start, end + 1))
        else:
            indexes.append(index_of(item))
    return indexes


def _suggested_grid(grid: Grid, output: CoverageCRS) -> tuple[Any, int, int]:
    transform, width, height = calculate_default_transform(
        grid.crs.rasterio, output.rasterio, grid.width, grid.height, *grid.bounds)
    return transform, width, height


def _window(grid: Grid, subsets: list[Subset], subsetting: CoverageCRS, output: CoverageCRS,
            transform: Any, width: int, height: int) -> tuple[int, int, int, int]:
    """The pixel window (col0, row0, col1, row1) of the working grid the subsets select."""
    by_kind: dict[str, Subset] = {}
    dimensions: set[int] = set()
    for subset in subsets:
        kind = axis_kind(subset.axis, subsetting)
        dimension = 0 if kind in ("x", "i") else 1
        if dimension in dimensions:
            raise AxisLabelError(f"Axis {subset.axis} is subset twice")
        dimensions.add(dimension)
        _check_order(subset)
        by_kind[kind] = subset
    col0, row0, col1, row1 = 0.0, 0.0, float(width), float(height)
    if "i" in by_kind or "j" in by_kind:
        if not output.same_as(grid.crs):
            raise SubsetError("Grid axes (i, j) cannot be subset together with an output CRS")
        col0, col1 = _grid_range(by_kind.get("i"), width, col0, col1)
        row0, row1 = _grid_range(by_kind.get("j"), height, row0, row1)
    x_sub, y_sub = by_kind.get("x"), by_kind.get("y")
    if x_sub or y_sub:
        box = _crs_box(x_sub, y_sub, subsetting, output, transform, width, height)
        inverse = ~transform
        c_a, r_a = inverse @ (box[0], box[3])
        c_b, r_b = inverse @ (box[2], box[1])
        cols = sorted((c_a, c_b))
        rows = sorted((r_a, r_b))
        col0, col1 = max(col0, _floor(cols[0])), min(col1, _ceil(cols[1]))
        row0, row1 = max(row0, _floor(rows[0])), min(row1, _ceil(rows[1]))
        # A slice (or a trim thinner than a pixel) still selects the pixel it falls in.
        if col1 == col0 and 0 <= col0 < width:
            col1 = col0 + 1
        if row1 == row0 and 0 <= row0 < height:
            row1 = row0 + 1
    col0, row0 = int(max(col0, 0)), int(max(row0, 0))
    col1, row1 = int(min(col1, width)), int(min(row1, height))
    if col1 <= col0 or row1 <= row0:
        raise SubsetError("The subset does not intersect the coverage")
    return col0, row0, col1, row1


def _check_order(subset: Subset) -> None:
    if subset.low is not None and subset.high is not None and subset.low > subset.high:
        raise SubsetError(f"Subset on {subset.axis}: the low bound is above the high bound")


def _grid_range(subset: Subset | None, size: int, low: float, high: float) -> tuple[float, float]:
    if subset is None:
        return low, high
    if subset.point is not None:
        return math.floor(subset.point), math.floor(subset.point) + 1
    start = low if subset.low is None else math.ceil(subset.low - EPSILON)
    end = high if subset.high is None else math.floor(subset.high + EPSILON) + 1  # inclusive
    return start, end


def _crs_box(x_sub: Subset | None, y_sub: Subset | None, subsetting: CoverageCRS, output: CoverageCRS,
             transform: Any, width: int, height: int) -> tuple[float, float, float, float]:
    """The subset as (minx, miny, maxx, maxy) in the working grid's CRS; open ends reach the
    coverage's extent."""
    t = transform
    extent = (t.c, t.f + t.e * height, t.c + t.a * width, t.f)
    same = subsetting.same_as(output)
    if not same:
        extent = transform_bounds(output.rasterio, subsetting.rasterio, *extent, densify_pts=21)
    minx, miny, maxx, maxy = extent

    def bounds(sub: Subset | None, low: float, high: float) -> tuple[float, float]:
        if sub is None:
            return low, high
        if sub.point is not None:
            return sub.point, sub.point
        return (low if sub.low is None else sub.low), (high if sub.high is None else sub.high)

    minx, maxx = bounds(x_sub, minx, maxx)
    miny, maxy = bounds(y_sub, miny, maxy)
    if same:
        return minx, miny, maxx, maxy
    try:
        return transform_bounds(subsetting.rasterio, output.rasterio, minx, miny, maxx, maxy, densify_pts=21)
    except Exception:
        raise SubsetError("The subset cannot be expressed in the coverage's CRS") from None


def _floor(value: float) -> float:
    nearest = round(value)
    return float(nearest) if abs(value - nearest) < EPSILON else float(math.floor(value))


def _ceil(value: float) -> float:
    nearest = round(value)
    return float(nearest) if abs(value - nearest) < EPSILON else float(math.ceil(value))


def _scaled_size(scaling: Scaling, width: int, height: int) -> tuple[int, int]:
    if not scaling.requested:
        return width, height
    new = [width, height]
    if scaling.factor is not None:
        if scaling.factor <= 0:
            raise InvalidInput("SCALEFACTOR must be positive")
        new = [max(1, round(width / scaling.factor)), max(1, round(height / scaling.factor))]
    for axis, factor in scaling.axis_factors.items():
        if factor <= 0:
            raise InvalidInput("Scale factors must be positive")
        dim = _scale_dim(axis)
        new[dim] = max(1, round((width, height)[dim] / factor))
    for axis, size in scaling.sizes.items():
        if size <= 0:
            raise InvalidInput("Scale sizes must be positive")
        new[_scale_dim(axis)] = size
    for axis, (low, high) in scaling.extents.items():
        if high < low:
            raise InvalidInput("Scale extents must not run backwards")
        new[_scale_dim(axis)] = high - low + 1
    return new[0], new[1]


def _scale_dim(axis: str) -> int:
    name = axis.strip().rsplit("/", 1)[-1].lower()
    if name in ("i", *X_ALIASES):
        return 0
    if name in ("j", *Y_ALIASES):
        return 1
    raise AxisLabelError(f"Axis {axis!r} cannot be scaled (use i or j)")


def data_range(dtype: str) -> tuple[float, float]:
    kind = np.dtype(dtype)
    info = np.iinfo(kind) if kind.kind in "iu" else np.finfo(kind)
    return float(info.min), float(info.max)
