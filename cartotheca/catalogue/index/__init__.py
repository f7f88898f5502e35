"""cartotheca.catalogue.index: exact totals and facet counts from in-process roaring bitmaps.

``bitmaps`` holds the sets, ``facts`` reads them from the database, ``build`` streams a full
build, ``feed`` polls the change table under the watermark rule, ``visibility`` and ``terms``
turn ``visible_to`` and filter terms into set algebra, ``counts`` answers lists and facets,
``catalogue_index`` keeps one process's index fresh. The composition root builds it.
"""

from cartotheca.catalogue.index.catalogue_index import CatalogueIndex
from cartotheca.catalogue.index.counts import IndexedCounts

__all__ = ["CatalogueIndex", "IndexedCounts"]
