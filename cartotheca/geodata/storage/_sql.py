"""cartotheca.geodata.storage._sql: the query path both vector stores share.

A ``FeatureQuery`` becomes one SQLAlchemy Core SELECT (attribute predicate, fids, sort, paging,
all as bound parameters); each store adds its bbox prefilter and how geometries come back.
Geometries are decoded per batch into shapely, masked by the exact spatial predicate and
reprojected with pyproj (always x/y order).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
import shapely
import sqlalchemy as sa
from pyproj import CRS, Transformer

from cartotheca.errors import InvalidInput
from cartotheca.geodata.storage import FeatureBatch, FeatureQuery, StoredLayer, as_box

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine


@lru_cache(maxsize=128)
def _crs(text: str):
    return CRS.from_user_input(text)


@lru_cache(maxsize=128)
def transformer(source: str, target: str):
    """A pyproj transformer between two CRS texts (None when they are the same CRS)."""

    src, dst = _crs(source), _crs(target)
    if src == dst:
        return None
    return Transformer.from_crs(src, dst, always_xy=True)


def reproject(geometries: np.ndarray, source: str, target: str) -> np.ndarray:
    transform = transformer(source, target)
    if transform is None or len(geometries) == 0:
        return geometries
    return shapely.transform(geometries, lambda x, y: transform.transform(x, y), interleaved=False)


def bbox_to_native(bbox: tuple[float, float, float, float], bbox_crs: str | None,
                   native: str | None) -> tuple[float, float, float, float]:
    if not bbox_crs or not native:
        return bbox
    try:
        transform = transformer(bbox_crs, native)
    except Exception as exc:
        raise InvalidInput(f"unknown coordinate reference system {bbox_crs!r}: {exc}") from None
    if transform is None:
        return bbox
    return tuple(transform.transform_bounds(*bbox, densify_pts=21))


class SQLVectorStore:
    """Query logic over an SQLAlchemy table; subclasses say how to connect and decode."""

    name: str
    # Read each batch through a connection of its own instead of streaming one result set
    # (server databases, whose pooled connections other requests wait for).
    connection_per_batch = False

    # -- what a backend provides --------------------------------------------------------------

    def table(self, stored: StoredLayer) -> sa.Table:  # pragma: no cover - abstract
        raise NotImplementedError

    def _engine(self, stored: StoredLayer) -> Engine:  # pragma: no cover - abstract
        raise NotImplementedError

    def _geometry_expression(self, stored: StoredLayer, table: sa.Table) -> Any:
        return table.c[stored.geometry_column]

    def _bbox_clause(self, stored: StoredLayer, table: sa.Table,
                     bbox: tuple[float, float, float, float]) -> Any:  # pragma: no cover
        raise NotImplementedError

    def _decode(self, values: list[Any]) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _ordering(self, column: sa.Column) -> Any:
        """What to order a column by (a backend may need an expression over it)."""
        return column

    def native_crs(self, stored: StoredLayer) -> str | None:
        if stored.srid:
            return f"EPSG:{stored.srid}"
        return stored.crs_wkt or None

    # -- the interface ------------------------------------------------------------------------

    def query(self, stored: StoredLayer, query: FeatureQuery) -> FeatureBatch:
        batches = list(self.iter_batches(stored, query, batch_size=50000))
        if not batches:
            return self._empty(stored, query)
        if len(batches) == 1:
            return batches[0]
        return FeatureBatch(
            fids=[f for b in batches for f in b.fids],
            geometries=np.concatenate([b.geometries for b in batches]),
            properties={k: [v for b in batches for v in b.properties[k]] for k in batches[0].properties},
        )

    def iter_batches(self, stored: StoredLayer, query: FeatureQuery,
                     batch_size: int = 10000) -> Iterator[FeatureBatch]:
        table = self.table(stored)
        names = self._property_names(stored, table, query.properties)
        predicate = query.geometry_predicate
        statement = self._select(stored, table, query, names, paged=predicate is None)
        skip = query.offset if predicate is not None else 0
        remaining = query.limit if predicate is not None else None
        if remaining is not None and remaining <= 0:
            return
        if self.connection_per_batch:
            chunks = self._pages(stored, table, query, names, batch_size, paged=predicate is None)
        else:
            chunks = self._streamed(stored, statement, batch_size)
        try:
            for rows in chunks:
                batch = self._batch(stored, rows, names)
                if predicate is not None:
                    mask = np.asarray(predicate(batch.geometries), dtype=bool)
                    batch = _take(batch, np.flatnonzero(mask))
                    if skip:
                        dropped = min(skip, len(batch))
                        skip -= dropped
                        batch = _take(batch, np.arange(dropped, len(batch)))
                    if remaining is not None:
                        batch = _take(batch, np.arange(min(remaining, len(batch))))
                        remaining -= len(batch)
                if len(batch):
                    yield self._reprojected(stored, batch, query.out_crs)
                if remaining is not None and remaining <= 0:
                    break
        finally:
            chunks.close()

    def _streamed(self, stored: StoredLayer, statement: sa.Select, batch_size: int
                  ) -> Generator[Sequence[Any], None, None]:
        """Rows of one statement through one connection, held until the last row is read."""
        with self._engine(stored).connect() as conn:
            result = self._stream(conn, statement, batch_size)
            try:
                yield from result.partitions(batch_size)
            finally:
                result.close()

    def _pages(self, stored: StoredLayer, table: sa.Table, query: FeatureQuery, names: list[str],
               batch_size: int, paged: bool) -> Generator[Sequence[Any], None, None]:
        """Rows page by page, each page read through a connection of its own.

        A server database's pooled connections are shared by every request, and a streamed
        answer is read as fast as its client reads: holding one connection (and its open
        transaction) for the whole answer would let a few slow clients take the pool. Pages
        follow the feature id (keyset: each page is an index range scan), or OFFSET when the
        request sorts on attributes. Features written between two pages may show up or not,
        as with any paging client."""
        statement = self._select(stored, table, query, names, paged=False)
        fid = table.c[stored.fid_column]
        offset = int(query.offset or 0) if paged else 0
        remaining = query.limit if paged else None
        keyset = not query.sort  # then ordered by fid alone
        last_fid = None
        while remaining is None or remaining > 0:
            size = batch_size if remaining is None else min(batch_size, remaining)
            page = statement.where(fid > last_fid) if last_fid is not None else statement.offset(offset)
            with self._engine(stored).connect() as conn:
                rows = conn.execute(page.limit(size)).all()
            if rows:
                yield rows
            if len(rows) < size:
                return
            if remaining is not None:
                remaining -= len(rows)
            if keyset:
                last_fid = rows[-1][0]
            else:
                offset += len(rows)

    def count(self, stored: StoredLayer, query: FeatureQuery) -> int:
        """Features matching the query's filters (its offset and limit are not applied)."""
        if query.geometry_predicate is not None:
            unpaged = FeatureQuery(bbox=query.bbox, bbox_crs=query.bbox_crs, where=query.where,
                                   geometry_predicate=query.geometry_predicate, properties=[],
                                   fids=query.fids)
            return sum(len(b) for b in self.iter_batches(stored, unpaged, batch_size=50000))
        table = self.table(stored)
        statement = sa.select(sa.func.count()).select_from(table)
        statement = statement.where(*self._filters(stored, table, query))
        with self._engine(stored).connect() as conn:
            return int(conn.execute(statement).scalar_one())

    def distinct(self, stored: StoredLayer, column: str, limit: int = 1000) -> list[Any]:
        table = self.table(stored)
        if column not in table.c or column == stored.geometry_column:
            raise InvalidInput(f"{stored.layer} has no attribute {column!r}")
        col = table.c[column]
        statement = (sa.select(col).where(col.is_not(None)).distinct()
                     .order_by(self._ordering(col)).limit(limit))
        with self._engine(stored).connect() as conn:
            return list(conn.execute(statement).scalars())

    # -- building the statement ---------------------------------------------------------------

    def _property_names(self, stored: StoredLayer, table: sa.Table, wanted: list[str] | None) -> list[str]:
        attributes = [c.name for c in table.columns
                      if c.name not in (stored.geometry_column, stored.fid_column)]
        if wanted is None:
            return attributes
        unknown = [n for n in wanted if n not in attributes]
        if unknown:
            raise InvalidInput(f"{stored.layer} has no attribute {', '.join(map(repr, unknown))}")
        return list(wanted)

    def _filters(self, stored: StoredLayer, table: sa.Table, query: FeatureQuery) -> list[Any]:
        clauses = []
        if query.bbox is not None:
            bbox = bbox_to_native(as_box(query.bbox), query.bbox_crs, self.native_crs(stored))
            clauses.append(self._bbox_clause(stored, table, bbox))
        if query.fids is not None:
            clauses.append(table.c[stored.fid_column].in_([int(f) for f in query.fids]))
        if query.where is not None:
            clauses.append(query.where(table))
        return clauses

    def _select(self, stored: StoredLayer, table: sa.Table, query: FeatureQuery, names: list[str],
                paged: bool) -> sa.Select:
        fid = table.c[stored.fid_column]
        geometry = self._geometry_expression(stored, table).label("__geometry")
        statement = sa.select(fid, geometry, *(table.c[n] for n in names))
        statement = statement.where(*self._filters(stored, table, query))
        order = []
        for field_name, ascending in query.sort:
            if field_name not in table.c or field_name == stored.geometry_column:
                raise InvalidInput(f"{stored.layer} has no attribute {field_name!r} to sort on")
            column = self._ordering(table.c[field_name])
            order.append(column.asc() if ascending else column.desc())
        statement = statement.order_by(*order, fid.asc())
        if paged:
            if query.offset:
                statement = statement.offset(int(query.offset))
            if query.limit is not None:
                statement = statement.limit(max(int(query.limit), 0))
        return statement

    def _stream(self, conn: Connection, statement: sa.Select, batch_size: int):
        return conn.execution_options(stream_results=True, yield_per=batch_size).execute(statement)

    # -- results ------------------------------------------------------------------------------

    def _batch(self, stored: StoredLayer, rows: Sequence[Any], names: list[str]) -> FeatureBatch:
        fids = [row[0] for row in rows]
        geometries = self._decode([row[1] for row in rows])
        properties = {name: [row[i + 2] for row in rows] for i, name in enumerate(names)}
        return FeatureBatch(fids=fids, geometries=geometries, properties=properties)

    def _reprojected(self, stored: StoredLayer, batch: FeatureBatch, out_crs: str | None) -> FeatureBatch:
        native = self.native_crs(stored)
        if out_crs and native:
            try:
                batch.geometries = reproject(batch.geometries, native, out_crs)
            except InvalidInput:
                raise
            except Exception as exc:
                raise InvalidInput(f"cannot reproject to {out_crs!r}: {exc}") from None
        return batch

    def _empty(self, stored: StoredLayer, query: FeatureQuery) -> FeatureBatch:
        names = self._property_names(stored, self.table(stored), query.properties)
        return FeatureBatch(fids=[], geometries=np.empty(0, dtype=object), properties={n: [] for n in names})


def _take(batch: FeatureBatch, index: np.ndarray) -> FeatureBatch:
    if len(index) == len(batch):
        return batch
    return FeatureBatch(
        fids=[batch.fids[i] for i in index],
        geometries=batch.geometries[index],
        properties={k: [v[i] for i in index] for k, v in batch.properties.items()},
    )
