"""cartotheca.geodata.storage.gpkg_copy: a GeoPackage layer copied to a new file under a new name.

The file is copied page by page with SQLite's online backup (a consistent snapshot even while
readers have it open), then the layer is renamed inside the copy: its table, its R-tree (so
the spatial index is kept, not rebuilt), the GeoPackage registry rows and the triggers that
keep the R-tree and GDAL's feature count in step with the table.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

# Registry tables that name a layer in ``table_name`` (the optional ones may be absent).
REGISTRY_TABLES = ("gpkg_contents", "gpkg_geometry_columns", "gpkg_extensions", "gpkg_ogr_contents",
                   "gpkg_data_columns", "gpkg_metadata_reference")


def backup(source: Path, target: Path) -> None:
    """Copy the GeoPackage ``source`` to ``target`` (a new file) through SQLite's backup API."""
    reader = sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro", uri=True)
    try:
        writer = sqlite3.connect(target)
        try:
            reader.backup(writer)
        finally:
            writer.close()
    finally:
        reader.close()


def rename_layer(path: Path, old: str, new: str, geometry_column: str) -> None:
    """Rename layer ``old`` of the GeoPackage at ``path`` to ``new``.

    The layer's triggers are dropped first and written again afterwards: they call GDAL's SQL
    functions (ST_IsEmpty, ST_MinX ...), which plain SQLite cannot resolve while ALTER TABLE
    re-checks the schema, and their names and the feature-count literal carry the layer name.
    """
    connection = sqlite3.connect(path)
    try:
        triggers = connection.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ?", (old,)).fetchall()
        for name, _sql in triggers:
            connection.execute(f"DROP TRIGGER {_quote(name)}")
        connection.execute(f"ALTER TABLE {_quote(old)} RENAME TO {_quote(new)}")
        old_index, new_index = f"rtree_{old}_{geometry_column}", f"rtree_{new}_{geometry_column}"
        if _exists(connection, old_index):
            connection.execute(f"ALTER TABLE {_quote(old_index)} RENAME TO {_quote(new_index)}")
        for table in REGISTRY_TABLES:
            if _exists(connection, table):
                connection.execute(f"UPDATE {table} SET table_name = ? WHERE table_name = ?", (new, old))
        connection.execute("UPDATE gpkg_contents SET identifier = ? WHERE table_name = ? AND identifier = ?",
                           (new, new, old))
        for _name, sql in triggers:
            connection.execute(renamed_trigger(sql, old, new, geometry_column))
        connection.commit()
    finally:
        connection.close()


def renamed_trigger(sql: str, old: str, new: str, geometry_column: str) -> str:
    """A layer trigger's SQL for the renamed layer. Only the places a layer name can hold are
    rewritten (the table after ON, the R-tree's name, GDAL's feature-count trigger names and
    literal), so a column that happens to share the layer's name is left alone."""
    index_prefix = f'"rtree_{old}_{geometry_column}'
    sql = sql.replace(index_prefix, f'"rtree_{new}_{geometry_column}')
    sql = re.sub(rf'\bON {re.escape(_quote(old))}', lambda _m: f"ON {_quote(new)}", sql)
    sql = re.sub(rf'(_feature_count_){re.escape(old)}"', lambda m: f'{m.group(1)}{new}"', sql)
    return sql.replace(f"lower('{old}')", f"lower('{new}')")


def _exists(connection: sqlite3.Connection, table: str) -> bool:
    return connection.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                              (table,)).fetchone() is not None


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'
