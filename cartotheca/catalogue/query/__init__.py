"""cartotheca.catalogue.query: THE list language (filter{}, search, sort[], extent, paging) → SQL.

A request's list parameters are read once, compiled against the collection's ``FieldMap``
(``fields``, ``compile``) and paged ids first (``paging``); ``resource_list`` holds the field
map and the clauses of resource collections. This package is what every list endpoint uses.
"""

from cartotheca.catalogue.query.compile import (
    FilterTerm,
    apply_where,
    compile_filters,
    compile_search,
    compile_sort,
    compile_term,
    filter_terms,
    parse_filter_key,
)
from cartotheca.catalogue.query.fields import (
    Field,
    FieldMap,
    convert,
    strict_bool,
    to_bool,
)
from cartotheca.catalogue.query.paging import (
    ListContext,
    Listing,
    paginate,
    paginate_uncounted,
    wants_total,
)
from cartotheca.catalogue.query.request import Page, check_utf8, parse_extent, parse_page, query_lists

__all__ = [
    "Field", "FieldMap", "FilterTerm", "ListContext", "Listing", "Page", "apply_where",
    "check_utf8", "compile_filters", "compile_search", "compile_sort", "compile_term", "convert",
    "filter_terms", "paginate", "paginate_uncounted", "parse_extent",
    "parse_filter_key", "parse_page", "query_lists", "strict_bool", "to_bool", "wants_total",
]
