"""cartotheca.db.models.resources: the one resource base table every type shares, and its links."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import (
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from cartotheca.db.base import Base, created_at, intpk, utcnow, uuid_str
from cartotheca.db.models.accounts import Group, User
from cartotheca.db.models.reference import (
    Category,
    Keyword,
    License,
    Region,
    RestrictionCodeType,
    SpatialRepresentationType,
    ThesaurusKeyword,
)

resource_keywords = Table(
    "resource_keywords",
    Base.metadata,
    Column("resource_id", Integer, ForeignKey("resources.id", ondelete="CASCADE"), primary_key=True),
    Column("keyword_id", Integer, ForeignKey("keywords.id", ondelete="CASCADE"), primary_key=True),
    Index("ix_resource_keywords_keyword", "keyword_id", "resource_id"),
)

resource_regions = Table(
    "resource_regions",
    Base.metadata,
    Column("resource_id", Integer, ForeignKey("resources.id", ondelete="CASCADE"), primary_key=True),
    Column("region_id", Integer, ForeignKey("regions.id", ondelete="CASCADE"), primary_key=True),
    Index("ix_resource_regions_region", "region_id", "resource_id"),
)

resource_tkeywords = Table(
    "resource_tkeywords",
    Base.metadata,
    Column("resource_id", Integer, ForeignKey("resources.id", ondelete="CASCADE"), primary_key=True),
    Column(
        "tkeyword_id", Integer, ForeignKey("thesaurus_keywords.id", ondelete="CASCADE"), primary_key=True
    ),
    Index("ix_resource_tkeywords_tkeyword", "tkeyword_id", "resource_id"),
)


class Resource(Base):
    """The resource record of every type (dataset, map, document, geoapp, service)."""

    __tablename__ = "resources"
    __table_args__ = (
        Index("ix_resources_created_id", "created", "id"),
        Index("ix_resources_last_updated_id", "last_updated", "id"),
        Index("ix_resources_date_id", "date", "id"),
        Index("ix_resources_title_id", "title", "id"),
        Index("ix_resources_type_created", "resource_type", "created"),
        Index("ix_resources_owner_created", "owner_id", "created"),
    )

    id: Mapped[intpk]
    uuid: Mapped[uuid_str]
    resource_type: Mapped[str] = mapped_column(String(32))
    subtype: Mapped[str | None] = mapped_column(String(32))
    title: Mapped[str] = mapped_column(String(255))
    abstract: Mapped[str] = mapped_column(Text, default="")
    purpose: Mapped[str | None] = mapped_column(Text)
    attribution: Mapped[str | None] = mapped_column(String(2048))
    doi: Mapped[str | None] = mapped_column(String(255))
    edition: Mapped[str | None] = mapped_column(String(255))
    maintenance_frequency: Mapped[str | None] = mapped_column(String(255))
    constraints_other: Mapped[str | None] = mapped_column(Text)
    supplemental_information: Mapped[str | None] = mapped_column(Text)
    data_quality_statement: Mapped[str | None] = mapped_column(Text)
    name: Mapped[str | None] = mapped_column(String(255))
    alternate: Mapped[str | None] = mapped_column(String(255), index=True)

    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="RESTRICT"))
    category_id: Mapped[int | None] = mapped_column(
        ForeignKey("categories.id", ondelete="SET NULL"), index=True
    )
    license_id: Mapped[int | None] = mapped_column(ForeignKey("licenses.id", ondelete="SET NULL"))
    group_id: Mapped[int | None] = mapped_column(
        ForeignKey("groups.id", ondelete="SET NULL"), index=True
    )
    restriction_code_type_id: Mapped[int | None] = mapped_column(
        ForeignKey("restriction_code_types.id", ondelete="SET NULL")
    )
    spatial_representation_type_id: Mapped[int | None] = mapped_column(
        ForeignKey("spatial_representation_types.id", ondelete="SET NULL")
    )

    date: Mapped[dt.datetime] = mapped_column(default=utcnow)
    date_type: Mapped[str] = mapped_column(String(32), default="publication")
    temporal_extent_start: Mapped[dt.datetime | None]
    temporal_extent_end: Mapped[dt.datetime | None]
    created: Mapped[created_at]
    last_updated: Mapped[dt.datetime] = mapped_column(default=utcnow, onupdate=utcnow)
    language: Mapped[str] = mapped_column(String(3), default="eng")

    # Extent: native box (in ``srid``) and the lon/lat box used by ``extent=`` queries.
    # The lon/lat box is indexed by an R*Tree (SQLite) or a GiST box index (PostgreSQL),
    # both created by the migration.
    srid: Mapped[str] = mapped_column(String(30), default="EPSG:4326")
    bbox_x0: Mapped[float | None] = mapped_column(Float)
    bbox_x1: Mapped[float | None] = mapped_column(Float)
    bbox_y0: Mapped[float | None] = mapped_column(Float)
    bbox_y1: Mapped[float | None] = mapped_column(Float)
    ll_minx: Mapped[float | None] = mapped_column(Float)
    ll_miny: Mapped[float | None] = mapped_column(Float)
    ll_maxx: Mapped[float | None] = mapped_column(Float)
    ll_maxy: Mapped[float | None] = mapped_column(Float)

    featured: Mapped[bool] = mapped_column(Boolean, default=False)
    is_published: Mapped[bool] = mapped_column(Boolean, default=True)
    is_approved: Mapped[bool] = mapped_column(Boolean, default=True)
    advertised: Mapped[bool] = mapped_column(Boolean, default=True)
    metadata_only: Mapped[bool] = mapped_column(Boolean, default=False)
    processed: Mapped[bool] = mapped_column(Boolean, default=True)
    dirty_state: Mapped[bool] = mapped_column(Boolean, default=False)
    state: Mapped[str] = mapped_column(String(16), default="PROCESSED")
    sourcetype: Mapped[str] = mapped_column(String(16), default="LOCAL")
    is_copyable: Mapped[bool] = mapped_column(Boolean, default=True)
    metadata_uploaded_preserve: Mapped[bool] = mapped_column(Boolean, default=False)
    popular_count: Mapped[int] = mapped_column(default=0)
    share_count: Mapped[int] = mapped_column(default=0)
    rating: Mapped[int] = mapped_column(default=0)
    thumbnail_url: Mapped[str | None] = mapped_column(String(2048))
    embed_url: Mapped[str | None] = mapped_column(String(2048))
    # Type-specific configuration (map/geoapp blob); deferred on the wire.
    blob: Mapped[dict[str, Any] | None]

    owner: Mapped[User] = relationship(lazy="raise", foreign_keys=[owner_id])
    category: Mapped[Category | None] = relationship(lazy="raise")
    license: Mapped[License | None] = relationship(lazy="raise")
    group: Mapped[Group | None] = relationship(lazy="raise")
    restriction_code_type: Mapped[RestrictionCodeType | None] = relationship(lazy="raise")
    spatial_representation_type: Mapped[SpatialRepresentationType | None] = relationship(
        lazy="raise"
    )
    keywords: Mapped[list[Keyword]] = relationship(secondary=resource_keywords, lazy="raise")
    regions: Mapped[list[Region]] = relationship(secondary=resource_regions, lazy="raise")
    tkeywords: Mapped[list[ThesaurusKeyword]] = relationship(
        secondary=resource_tkeywords, lazy="raise"
    )
    contacts: Mapped[list[ContactRole]] = relationship(
        lazy="raise", cascade="all, delete-orphan", order_by="ContactRole.id"
    )


class ContactRole(Base):
    """A user in a metadata role (poc, metadata_author, publisher, ...) of a resource."""

    __tablename__ = "contact_roles"
    __table_args__ = (UniqueConstraint("resource_id", "role", "user_id"),)

    id: Mapped[intpk]
    resource_id: Mapped[int] = mapped_column(ForeignKey("resources.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    role: Mapped[str] = mapped_column(String(32))

    user: Mapped[User] = relationship(lazy="raise")


class Favorite(Base):
    __tablename__ = "favorites"
    __table_args__ = (UniqueConstraint("user_id", "resource_id"),)

    id: Mapped[intpk]
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    resource_id: Mapped[int] = mapped_column(
        ForeignKey("resources.id", ondelete="CASCADE"), index=True
    )
    created: Mapped[created_at]
