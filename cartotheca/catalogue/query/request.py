"""cartotheca.catalogue.query.request: the list parameters of a request read once.

The query string is checked for UTF-8, grouped by name and parsed into the page wanted and
the extent boxes; malformed values raise ``InvalidQuery`` naming the parameter.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import unquote_to_bytes

from cartotheca.catalogue.query.fields import strict_bool
from cartotheca.errors import InvalidQuery

OPERATORS = {
    "eq", "in", "icontains", "contains", "startswith", "istartswith", "endswith", "iendswith",
    "iexact", "gt", "gte", "lt", "lte", "range", "isnull",
}

FILTER_KEY = re.compile(r"^filter\{(?P<body>[^{}]*)\}$")

# ---------------------------------------------------------------------------------------
# filter{...}


@dataclass(frozen=True)
class FilterTerm:
    param: str
    path: str
    op: str
    negated: bool
    values: tuple[str, ...]


def parse_filter_key(key: str) -> tuple[str, str, bool]:
    match = FILTER_KEY.match(key)
    if not match:
        raise InvalidQuery(f'"{key}" is not a well-formed filter key.', code="parse_error")
    body = match.group("body").strip()
    negated = body.startswith("-")
    if negated:
        body = body[1:]
    if not body or any(not part for part in body.split(".")):
        raise InvalidQuery(f'"{key}" is not a well-formed filter key.', code="parse_error")
    head, _, last = body.rpartition(".")
    if head and last in OPERATORS:
        return head, last, negated
    return body, "eq", negated


def filter_terms(params: Iterable[tuple[str, str]]) -> list[FilterTerm]:
    grouped: dict[str, list[str]] = {}
    for key, value in params:
        if key.startswith("filter{") or key.startswith("filter%7B"):
            grouped.setdefault(key, []).append(value)
        elif key.startswith("filter"):
            if key != "filter":  # a bare "filter=" is another thing (CQL, OWS); not ours here
                raise InvalidQuery(f'"{key}" is not a well-formed filter key.', code="parse_error")
    terms = []
    for key, values in grouped.items():
        path, op, negated = parse_filter_key(key)
        terms.append(FilterTerm(key, path, op, negated, tuple(values)))
    return terms


def search_terms(params: Mapping[str, list[str]]) -> tuple[str, ...]:
    """The words of ``search`` (commas separate words too)."""
    texts = params.get("search", [])
    if any("\x00" in item for item in texts):  # text no database stores: a 400, as for filters
        raise InvalidQuery("Invalid value for search: it contains a NUL character")
    return tuple(" ".join(texts).replace(",", " ").split())


def sort_names(params: Mapping[str, list[str]]) -> list[tuple[str, str]]:
    """``sort[]`` is authoritative; ``ordering`` (comma-separated) is an alias when it is absent."""
    names = [(n, "sort[]") for n in params.get("sort[]", []) + params.get("sort", []) if n]
    if not names:
        for raw in params.get("ordering", []):
            names.extend((n.strip(), "ordering") for n in raw.split(",") if n.strip())
    return names


# ---------------------------------------------------------------------------------------
# extent


def parse_extent(raw_values: list[str]) -> list[tuple[float, float, float, float]]:
    """``extent=minx,miny,maxx,maxy`` (lon/lat); groups of four may repeat and are ORed."""
    boxes = []
    for raw in raw_values:
        parts = [p for p in raw.replace(" ", "").split(",")]
        if not parts or len(parts) % 4 != 0:
            raise InvalidQuery(f"Invalid value for extent: {raw}")
        try:
            numbers = [float(p) for p in parts]
        except ValueError:
            raise InvalidQuery(f"Invalid value for extent: {raw}") from None
        if not all(math.isfinite(n) for n in numbers):
            raise InvalidQuery(f"Invalid value for extent: {raw}")
        for i in range(0, len(numbers), 4):
            minx, miny, maxx, maxy = numbers[i:i + 4]
            if miny > maxy or not (-90.0 <= miny <= 90.0) or not (-90.0 <= maxy <= 90.0):
                raise InvalidQuery(f"Invalid value for extent: {raw}")
            boxes.extend(split_antimeridian(minx, miny, maxx, maxy))
    return boxes


def split_antimeridian(minx: float, miny: float, maxx: float, maxy: float
                       ) -> list[tuple[float, float, float, float]]:
    if maxx - minx >= 360:
        return [(-180.0, miny, 180.0, maxy)]
    # Normalise longitudes into [-180, 180); a box whose west edge is east of its east edge
    # crosses the antimeridian and is split in two.
    def wrap(x: float) -> float:
        return ((x + 180.0) % 360.0) - 180.0 if not -180.0 <= x <= 180.0 else x

    west, east = wrap(minx), wrap(maxx)
    if west <= east:
        return [(west, miny, east, maxy)]
    return [(west, miny, 180.0, maxy), (-180.0, miny, east, maxy)]


# ---------------------------------------------------------------------------------------
# paging


@dataclass(frozen=True)
class Page:
    number: int | None  # None: "last"
    size: int | None  # None: no limit
    echo_size: int | None


def parse_page(params: Mapping[str, list[str]], *, default_size: int, search_size: int,
               max_size: int) -> Page:
    raw_size = first(params, "page_size")
    size: int | None
    if raw_size is None or raw_size == "":
        size = search_size if params.get("search") else default_size
        size = size if size > 0 else None
    else:
        try:
            size = int(raw_size)
        except ValueError:
            raise InvalidQuery(f"Invalid value for page_size: {raw_size}") from None
        if size < 1 or size > max_size:
            raise InvalidQuery(
                f"Invalid value for page_size: {raw_size} (an integer from 1 to {max_size})"
            )
    raw_page = (params.get("page") or ["1"])[0]
    if raw_page == "last":
        return Page(None, size, size)
    try:
        number = int(raw_page)
    except ValueError:
        raise InvalidQuery(f"Invalid value for page: {raw_page}") from None
    if number < 1:
        raise InvalidQuery(f"Invalid value for page: {raw_page}")
    return Page(number, size, size)


def check_utf8(raw_query: bytes) -> None:
    """Reject a query string whose percent-escapes are not UTF-8.

    Starlette decodes such bytes to U+FFFD, which would silently filter on a different value
    than the client sent; the parameter is named so the client can find it.
    """
    for pair in raw_query.split(b"&"):
        key, _, value = pair.partition(b"=")
        for part in (key, value):
            try:
                unquote_to_bytes(part.replace(b"+", b" ")).decode("utf-8")
            except UnicodeDecodeError:
                name = unquote_to_bytes(key).decode("utf-8", "replace")
                raise InvalidQuery(f"Invalid UTF-8 in query parameter: {name}") from None


def first(params: Mapping[str, list[str]], name: str) -> str | None:
    """The first value of a parameter, or None when it is absent."""
    values = params.get(name)
    return values[0] if values else None


def query_lists(items: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, value in items:
        out.setdefault(key, []).append(value)
    return out


# ---------------------------------------------------------------------------------------
# the whole list request


@dataclass(frozen=True)
class ListQuery:
    """One request's list parameters, parsed once; ``paging.page`` compiles them against the
    collection's ``FieldMap``.

    ``total`` keeps the raw ``total=`` wish: only lists that can skip the count read it
    (``wants_total``), so on other lists it stays ignored as it always was.
    """

    filters: tuple[FilterTerm, ...] = ()
    search: tuple[str, ...] = ()
    search_fields: tuple[str, ...] = ()
    sort: tuple[tuple[str, str], ...] = ()
    page: Page = Page(1, None, None)
    total: str | None = None

    @classmethod
    def parse(cls, items: Iterable[tuple[str, str]], params: Mapping[str, list[str]], *,
              default_size: int, search_size: int, max_size: int) -> ListQuery:
        return cls(
            filters=tuple(filter_terms(items)),
            search=search_terms(params),
            search_fields=tuple(params.get("search_fields") or ()),
            sort=tuple(sort_names(params)),
            page=parse_page(params, default_size=default_size, search_size=search_size,
                            max_size=max_size),
            total=first(params, "total"),
        )

    def wants_total(self) -> bool:
        return True if self.total is None else strict_bool(self.total, "total")
