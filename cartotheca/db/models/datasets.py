"""cartotheca.db.models.datasets: what a published dataset adds to its resource record.

A dataset is a ``resources`` row (resource_type ``dataset``) plus one ``datasets`` row that says
where its data lives (``storage`` + ``location`` + ``layer``), its attributes, its styles and the
upload that made it.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import Boolean, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from cartotheca.db.base import Base, created_at, intpk, utcnow


class Dataset(Base):
    __tablename__ = "datasets"
    __table_args__ = (UniqueConstraint("workspace", "name"),)

    resource_id: Mapped[int] = mapped_column(
        ForeignKey("resources.id", ondelete="CASCADE"), primary_key=True
    )
    workspace: Mapped[str] = mapped_column(String(64))
    name: Mapped[str] = mapped_column(String(128))  # layer name; alternate = workspace:name
    store: Mapped[str] = mapped_column(String(128))
    # "geopackage" | "postgis" (vector) or "cog" (raster)
    storage: Mapped[str] = mapped_column(String(16))
    # geopackage/cog: path relative to the storage root; postgis: schema-qualified table
    location: Mapped[str] = mapped_column(String(1024))
    layer: Mapped[str] = mapped_column(String(255))  # layer/table name inside the store
    geometry_column: Mapped[str | None] = mapped_column(String(128))
    geometry_type: Mapped[str | None] = mapped_column(String(32))  # Point, MultiPolygon, ...
    fid_column: Mapped[str | None] = mapped_column(String(128))
    feature_count: Mapped[int | None]
    native_crs: Mapped[str | None] = mapped_column(Text)  # WKT of the data's CRS
    native_srid: Mapped[int | None]  # its EPSG code when it has one
    charset: Mapped[str] = mapped_column(String(32), default="UTF-8")
    has_time: Mapped[bool] = mapped_column(Boolean, default=False)
    time_attribute: Mapped[str | None] = mapped_column(String(128))
    time_end_attribute: Mapped[str | None] = mapped_column(String(128))
    time_regex: Mapped[str | None] = mapped_column(String(128))
    has_elevation: Mapped[bool] = mapped_column(Boolean, default=False)
    elevation_regex: Mapped[str | None] = mapped_column(String(128))
    is_mosaic: Mapped[bool] = mapped_column(Boolean, default=False)
    ptype: Mapped[str] = mapped_column(String(64), default="gxp_wmscsource")
    featureinfo_custom_template: Mapped[str | None] = mapped_column(Text)
    # Raster facts (bands, dtype, nodata, width, height, resolution, band statistics)
    raster_info: Mapped[dict[str, Any] | None]
    # Original uploaded file names, kept for the record ([{"name", "slug", "file"}])
    source_files: Mapped[list[Any] | None]

    attributes: Mapped[list[DatasetAttribute]] = relationship(
        lazy="raise", cascade="all, delete-orphan", order_by="DatasetAttribute.display_order"
    )
    styles: Mapped[list[Style]] = relationship(
        lazy="raise", cascade="all, delete-orphan", order_by="Style.id"
    )


class DatasetAttribute(Base):
    __tablename__ = "dataset_attributes"
    __table_args__ = (Index("ix_dataset_attributes_dataset", "dataset_id", "display_order"),)

    id: Mapped[intpk]
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.resource_id", ondelete="CASCADE"))
    attribute: Mapped[str] = mapped_column(String(255))
    description: Mapped[str | None] = mapped_column(Text)
    attribute_label: Mapped[str | None] = mapped_column(String(255))
    attribute_type: Mapped[str] = mapped_column(String(64), default="xsd:string")
    visible: Mapped[bool] = mapped_column(Boolean, default=True)
    display_order: Mapped[int] = mapped_column(Integer, default=1)
    featureinfo_type: Mapped[str] = mapped_column(String(32), default="type_property")
    # Statistics computed at ingest; GeoNode serialises them as strings ("NA" when unknown)
    count: Mapped[int] = mapped_column(Integer, default=0)
    min: Mapped[str] = mapped_column(String(255), default="NA")
    max: Mapped[str] = mapped_column(String(255), default="NA")
    average: Mapped[str] = mapped_column(String(255), default="NA")
    median: Mapped[str] = mapped_column(String(255), default="NA")
    stddev: Mapped[str] = mapped_column(String(255), default="NA")
    sum: Mapped[str] = mapped_column(String(255), default="NA")
    unique_values: Mapped[str] = mapped_column(Text, default="NA")
    last_stats_updated: Mapped[dt.datetime | None]


class Style(Base):
    __tablename__ = "styles"
    __table_args__ = (UniqueConstraint("workspace", "name"),)

    id: Mapped[intpk]
    dataset_id: Mapped[int] = mapped_column(
        ForeignKey("datasets.resource_id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(255))
    workspace: Mapped[str] = mapped_column(String(64))
    sld_title: Mapped[str | None] = mapped_column(String(255))
    sld_body: Mapped[str] = mapped_column(Text)  # SLD 1.0/1.1 XML
    is_default: Mapped[bool] = mapped_column(Boolean, default=False)
    created: Mapped[created_at]
    last_updated: Mapped[dt.datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class Upload(Base):
    """An upload session (spec §2.5): the files received and the state of their import."""

    __tablename__ = "uploads"
    __table_args__ = (Index("ix_uploads_user_created", "user_id", "create_date"),)

    id: Mapped[intpk]
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(255))
    title: Mapped[str | None] = mapped_column(String(255))
    state: Mapped[str] = mapped_column(String(16), default="READY", index=True)
    complete: Mapped[bool] = mapped_column(Boolean, default=False)
    create_date: Mapped[created_at]
    date: Mapped[dt.datetime] = mapped_column(default=utcnow, onupdate=utcnow)
    exec_id: Mapped[str | None] = mapped_column(String(36), index=True)
    resource_id: Mapped[int | None] = mapped_column(
        ForeignKey("resources.id", ondelete="SET NULL"), index=True
    )
    # [{"name": stem, "slug": file name, "file": stored path}]
    files: Mapped[list[Any] | None]
    size: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text)
    bbox: Mapped[list[Any] | None]
    srid: Mapped[str | None] = mapped_column(String(30))


__all__ = ["Dataset", "DatasetAttribute", "Style", "Upload"]
