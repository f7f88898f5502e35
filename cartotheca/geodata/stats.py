"""cartotheca.geodata.stats: attribute statistics as GeoNode shows them on a dataset's attributes.

GeoNode derives count, min, max, average, median, standard deviation and sum for numeric
attributes that are not identifiers (``id``, ``identifier``) and keeps every value as a
string, ``"NA"`` when it does not apply. Unique values are listed when there are few.
"""

from __future__ import annotations

import json
import math
from typing import Any

NA = "NA"
NUMERIC = ("xsd:int", "xsd:long", "xsd:double", "xsd:float", "xsd:short", "xsd:decimal")
IDENTIFIERS = ("id", "identifier")
MAX_UNIQUE = 100  # more distinct values than this: unique_values stays "NA"
STAT_KEYS = ("count", "min", "max", "average", "median", "stddev", "sum", "unique_values")


def empty() -> dict[str, Any]:
    return {"count": 0, "min": NA, "max": NA, "average": NA, "median": NA, "stddev": NA,
            "sum": NA, "unique_values": NA}


def attribute_stats(name: str, xsd_type: str, column: Any) -> dict[str, Any]:
    """Statistics of one attribute column (a pyarrow array or chunked array; None = no data)."""
    out = empty()
    if column is None:
        return out
    import pyarrow.compute as pc

    out["count"] = int(len(column) - column.null_count)
    out["unique_values"] = _unique(column)
    if not _aggregable(name, xsd_type) or out["count"] == 0:
        return out
    bounds = pc.min_max(column).as_py()
    values = column.drop_null().to_numpy() if hasattr(column, "drop_null") else column.to_numpy()
    import numpy as np

    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return out
    integral = xsd_type in ("xsd:int", "xsd:long", "xsd:short")
    out.update(
        min=_number(bounds["min"], integral), max=_number(bounds["max"], integral),
        average=_number(float(values.mean())), median=_number(float(np.median(values))),
        stddev=_number(float(values.std(ddof=1)) if values.size > 1 else 0.0),
        sum=_number(int(values.sum()) if integral else float(values.sum()), integral),
    )
    return out


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
    import pyarrow.compute as pc

    distinct = pc.unique(column.drop_null() if hasattr(column, "drop_null") else column)
    if len(distinct) > MAX_UNIQUE:
        return NA
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
