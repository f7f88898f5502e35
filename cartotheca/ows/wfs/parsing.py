"""cartotheca.ows.wfs.parsing: a GetFeature request, KVP or XML, read into its queries, paging
and output format."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cartotheca import xmlsafe
from cartotheca.errors import CartothecaError, OWSException
from cartotheca.filters.parse import id_type_names
from cartotheca.ows.request import OWSRequest
from cartotheca.ows.wfs.feature_types import split_names, type_names
from cartotheca.ows.wfs.formats import output_format
from cartotheca.xmlsafe import local_name

# The largest COUNT/STARTINDEX accepted: past any layer's size, well inside the LIMIT/OFFSET
# integers of PostgreSQL and SQLite.
MAX_INDEX = 2**31 - 1


@dataclass
class Query:
    """One typename's part of a GetFeature (KVP or a ``wfs:Query`` element)."""

    type_name: str
    srs_name: str | None = None
    properties: list[str] | None = None
    sort: list[tuple[str, bool]] = field(default_factory=list)
    fes: Any = None  # filter element
    cql: str | None = None
    bbox: str | None = None
    ids: list[str] | None = None


@dataclass
class GetFeature:
    version: str
    queries: list[Query]
    count: int | None
    start: int
    hits: bool
    format: str


def _int_param(value: str | None, name: str) -> int | None:
    """COUNT, MAXFEATURES or STARTINDEX; a value past MAX_INDEX would overflow the database's
    LIMIT/OFFSET integer halfway through a streamed answer, so it is refused up front."""
    if value in (None, ""):
        return None
    try:
        number = int(float(value))
    except (ValueError, OverflowError):  # "nan", "inf", "1e400"
        raise OWSException("InvalidParameterValue", f"{name} must be an integer", locator=name) from None
    if not 0 <= number <= MAX_INDEX:
        raise OWSException("InvalidParameterValue", f"{name} must be between 0 and {MAX_INDEX}",
                           locator=name)
    return number


def _sort(text: str | None) -> list[tuple[str, bool]]:
    out = []
    for item in (text or "").split(","):
        words = item.strip().split()
        if not words:
            continue
        direction = words[1].upper() if len(words) > 1 else "ASC"
        if direction not in ("A", "D", "ASC", "DESC"):
            raise OWSException("InvalidParameterValue", f"Invalid sort order {item}", locator="sortBy")
        out.append((words[0], direction in ("A", "ASC")))
    return out


def _filter_element(text: str) -> Any:
    body = text.strip()
    if body.startswith("(") and body.endswith(")"):
        body = body[1:-1]
    try:
        return xmlsafe.parse(body.encode("utf-8"), "filter")
    except CartothecaError as exc:
        raise OWSException("InvalidParameterValue", f"Invalid filter: {exc.message}",
                           locator="filter") from None


def parse_kvp(req: OWSRequest, version: str) -> GetFeature:
    ids_text = req.get("RESOURCEID") or req.get("FEATUREID")
    ids = split_names(ids_text) if ids_text else None
    names = type_names(req, version, required=ids is None) or id_type_names(ids or [])
    if not names:
        raise OWSException("MissingParameterValue", "Parameter TYPENAMES is required",
                           locator="typeName")
    props = req.get("PROPERTYNAME")
    fes_text, cql = req.get("FILTER"), req.get("CQL_FILTER")
    fes = _filter_element(fes_text) if fes_text else None
    queries = [Query(name, srs_name=req.get("SRSNAME") or req.get("SRS"),
                     properties=[p for p in split_names(props) if p != "*"] or None if props else None,
                     sort=_sort(req.get("SORTBY")), fes=fes, cql=cql, bbox=req.get("BBOX"), ids=ids)
               for name in names]
    count = _int_param(req.get("COUNT") or req.get("MAXFEATURES"), "count")
    return GetFeature(version, queries, count, _int_param(req.get("STARTINDEX"), "startIndex") or 0,
                      (req.get("RESULTTYPE") or "results").lower() == "hits",
                      output_format(req, version, req.get("OUTPUTFORMAT")))


def parse_xml(req: OWSRequest, version: str) -> GetFeature:
    root = req.xml
    queries = []
    for q in root:
        if local_name(q) != "Query":
            continue
        props = [(p.text or "").strip() for p in q if local_name(p) in ("PropertyName", "ValueReference")
                 and (p.text or "").strip()]
        fes = next((c for c in q if local_name(c) == "Filter"), None)
        sort = []
        for sort_by in (c for c in q if local_name(c) == "SortBy"):
            for prop in sort_by:
                name = next(((c.text or "").strip() for c in prop if local_name(c) in
                             ("PropertyName", "ValueReference")), "")
                order = next(((c.text or "").strip().upper() for c in prop
                              if local_name(c) == "SortOrder"), "ASC")
                sort.append((name, order in ("ASC", "A")))
        for name in split_names(q.get("typeNames") or q.get("typeName") or ""):
            queries.append(Query(name, srs_name=q.get("srsName"), properties=props or None, sort=sort,
                                 fes=fes))
    if not queries:
        raise OWSException("MissingParameterValue", "GetFeature needs a wfs:Query", locator="typeName")
    count = _int_param(root.get("count") or root.get("maxFeatures"), "count")
    return GetFeature(version, queries, count, _int_param(root.get("startIndex"), "startIndex") or 0,
                      (root.get("resultType") or "results").lower() == "hits",
                      output_format(req, version, root.get("outputFormat")))

