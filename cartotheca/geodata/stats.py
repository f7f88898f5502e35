"""cartotheca.geodata.stats: attribute statistics as GeoNode shows them on a dataset's attributes.

GeoNode derives count, min, max, average, median, standard deviation and sum for numeric
attributes that are not identifiers (``id``, ``identifier``) and keeps every value as a
string, ``"NA"`` when it does not apply. Unique values are listed when there are few.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

NA = "NA"
NUMERIC = ("xsd:int", "xsd:long", "xsd:double", "xsd:float", "xsd:short", "xsd:decimal")
IDENTIFIERS = ("id", "identifier")
MAX_UNIQUE = 100  # more distinct values than this: unique_values stays "NA"
UNIQUE_SLICE = 2048  # rows hashed at a time while looking for the distinct values
STAT_KEYS = ("count", "min", "max", "average", "median", "stddev", "sum", "unique_values")


def empty() -> dict[str, Any]:
    return {"count": 0, "min": NA, "max": NA, "average": NA, "median": NA, "stddev": NA,
            "sum": NA, "unique_values": NA}


def attribute_stats(name: str, xsd_type: str, column: Any) -> dict[str, Any]:
    """Statistics of one attribute column (a pyarrow array or chunked array; None = no data),
    computed by Arrow kernels over the whole column."""
    out = empty()
    if column is None:
        return out
    out["count"] = int(len(column) - column.null_count)
    out["unique_values"] = _unique(column)
    if not _aggregable(name, xsd_type) or out["count"] == 0:
        return out
    values = pc.cast(column, pa.float64())
    if pa.types.is_floating(column.type):
        values = pc.filter(values, pc.is_finite(values))  # NaN and infinities do not count
        column = values
    if len(values) - values.null_count == 0:
        return out
    integral = xsd_type in ("xsd:int", "xsd:long", "xsd:short")
    bounds = pc.min_max(column).as_py()
    total = pc.sum(column).as_py() if integral else pc.sum(values).as_py()
    median = _median(values)
    count = len(values) - values.null_count
    out.update(
        min=_number(bounds["min"], integral), max=_number(bounds["max"], integral),
        average=_number(pc.mean(values).as_py()), median=_number(median),
        stddev=_number(pc.stddev(values, ddof=1).as_py() if count > 1 else 0.0),
        sum=_number(total, integral),
    )
    return out


def _median(values: Any) -> float | None:
    """The exact median (the mean of the two middle values for an even count), as numpy gives."""
    quantiles = pc.quantile(values, q=0.5, interpolation="midpoint")
    return quantiles[0].as_py() if len(quantiles) else None


def _aggregable(name: str, xsd_type: str) -> bool:
    return xsd_type in NUMERIC and name.lower() not in IDENTIFIERS


def _number(value: Any, integral: bool = False) -> str:
    if value is None:
        return NA
    if integral:
        return str(int(value))
    value = float(value)
    if math.isnan(value) or math.isinf(value):
        return NA
    return repr(value)


def _unique(column: Any) -> str:
    """The distinct values as JSON when there are at most MAX_UNIQUE; slice by slice, so a
    column of many values (an identifier, a measurement) stops being hashed as soon as it has
    too many, usually within its first slice."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    slices = (chunk.slice(start, UNIQUE_SLICE) for chunk in chunks
              for start in range(0, len(chunk), UNIQUE_SLICE))
    distinct = None
    for chunk in slices:
        found = pc.unique(chunk.drop_null())
        if distinct is not None:
            found = pc.unique(pa.concat_arrays([distinct, found.cast(distinct.type)]))
        distinct = found
        if len(distinct) > MAX_UNIQUE:
            return NA
    if distinct is None:
        return json.dumps([])
    values = [_plain(v) for v in distinct.to_pylist()]
    try:
        values.sort()
    except TypeError:
        pass
    return json.dumps(values, ensure_ascii=False)


def _plain(value: Any) -> Any:
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    return value
