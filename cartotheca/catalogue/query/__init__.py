"""cartotheca.catalogue.query: THE list language (filter{}, search, sort[], extent, paging) → SQL.

A request's list parameters are parsed once into a ``ListQuery`` (``request``), compiled
against the collection's ``FieldMap`` (``fields``, ``compile``) and paged ids first by
``page`` (``paging``); ``resource_list`` holds the field map and the scope of resource lists.
Every list endpoint pages through ``page`` (or ``page_items`` for a list held in memory).
"""

from cartotheca.catalogue.query.compile import (
    compile_filters,
    compile_search,
    compile_sort,
    compile_term,
)
from cartotheca.catalogue.query.fields import Field, FieldMap, convert, strict_bool, to_bool
from cartotheca.catalogue.query.paging import ListContext, Listing, page, page_items
from cartotheca.catalogue.query.request import (
    FilterTerm,
    ListQuery,
    Page,
    check_utf8,
    filter_terms,
    parse_extent,
    parse_filter_key,
    parse_page,
    query_lists,
)

__all__ = [
    "Field", "FieldMap", "FilterTerm", "ListContext", "ListQuery", "Listing", "Page",
    "check_utf8", "compile_filters", "compile_search", "compile_sort", "compile_term", "convert",
    "filter_terms", "page", "page_items", "parse_extent", "parse_filter_key", "parse_page",
    "query_lists", "strict_bool", "to_bool",
]
