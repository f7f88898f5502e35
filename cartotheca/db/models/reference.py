"""cartotheca.db.models.reference: categories, keywords, thesauri, regions, licenses, code lists."""

from __future__ import annotations

from sqlalchemy import Boolean, Float, ForeignKey, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from cartotheca.db.base import Base, intpk


class Category(Base):
    """ISO 19115 topic category."""

    __tablename__ = "categories"

    id: Mapped[intpk]
    identifier: Mapped[str] = mapped_column(String(255), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    gn_description: Mapped[str | None] = mapped_column(String(255))
    is_choice: Mapped[bool] = mapped_column(Boolean, default=True)
    fa_class: Mapped[str] = mapped_column(String(64), default="fa-times")


class Keyword(Base):
    """Hierarchical keyword (materialised path, as GeoNode's treebeard model)."""

    __tablename__ = "keywords"

    id: Mapped[intpk]
    name: Mapped[str] = mapped_column(String(255), unique=True)
    slug: Mapped[str] = mapped_column(String(255), unique=True)
    path: Mapped[str] = mapped_column(String(255), default="")
    depth: Mapped[int] = mapped_column(default=1)
    numchild: Mapped[int] = mapped_column(default=0)
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("keywords.id", ondelete="SET NULL"))


class Thesaurus(Base):
    __tablename__ = "thesauri"

    id: Mapped[intpk]
    identifier: Mapped[str] = mapped_column(String(255), unique=True)
    title: Mapped[str] = mapped_column(String(255))
    about: Mapped[str | None] = mapped_column(String(255))
    description: Mapped[str] = mapped_column(Text, default="")
    order: Mapped[int] = mapped_column(default=0)


class ThesaurusKeyword(Base):
    __tablename__ = "thesaurus_keywords"
    __table_args__ = (UniqueConstraint("thesaurus_id", "alt_label"),)

    id: Mapped[intpk]
    about: Mapped[str | None] = mapped_column(String(255))
    alt_label: Mapped[str] = mapped_column(String(255))
    thesaurus_id: Mapped[int] = mapped_column(ForeignKey("thesauri.id", ondelete="CASCADE"), index=True)

    thesaurus: Mapped[Thesaurus] = relationship(lazy="raise")
    labels: Mapped[list[ThesaurusKeywordLabel]] = relationship(lazy="raise")


class ThesaurusKeywordLabel(Base):
    __tablename__ = "thesaurus_keyword_labels"
    __table_args__ = (UniqueConstraint("keyword_id", "lang"),)

    id: Mapped[intpk]
    keyword_id: Mapped[int] = mapped_column(ForeignKey("thesaurus_keywords.id", ondelete="CASCADE"))
    lang: Mapped[str] = mapped_column(String(10))
    label: Mapped[str] = mapped_column(String(255))


class Region(Base):
    __tablename__ = "regions"

    id: Mapped[intpk]
    code: Mapped[str] = mapped_column(String(50), unique=True)
    name: Mapped[str] = mapped_column(String(255), index=True)
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("regions.id", ondelete="SET NULL"))
    bbox_x0: Mapped[float | None] = mapped_column(Float)
    bbox_x1: Mapped[float | None] = mapped_column(Float)
    bbox_y0: Mapped[float | None] = mapped_column(Float)
    bbox_y1: Mapped[float | None] = mapped_column(Float)
    srid: Mapped[str] = mapped_column(String(30), default="EPSG:4326")
    lft: Mapped[int] = mapped_column(default=0)
    rght: Mapped[int] = mapped_column(default=0)
    tree_id: Mapped[int] = mapped_column(default=0)
    level: Mapped[int] = mapped_column(default=0)


class License(Base):
    __tablename__ = "licenses"

    id: Mapped[intpk]
    identifier: Mapped[str] = mapped_column(String(255), unique=True)
    name: Mapped[str] = mapped_column(String(255))
    abbreviation: Mapped[str | None] = mapped_column(String(64))
    description: Mapped[str] = mapped_column(Text, default="")
    url: Mapped[str | None] = mapped_column(String(2000))
    license_text: Mapped[str] = mapped_column(Text, default="")


class RestrictionCodeType(Base):
    """ISO 19115 MD_RestrictionCode."""

    __tablename__ = "restriction_code_types"

    id: Mapped[intpk]
    identifier: Mapped[str] = mapped_column(String(255), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    gn_description: Mapped[str] = mapped_column(String(255), default="")
    is_choice: Mapped[bool] = mapped_column(Boolean, default=True)


class SpatialRepresentationType(Base):
    """ISO 19115 MD_SpatialRepresentationTypeCode."""

    __tablename__ = "spatial_representation_types"

    id: Mapped[intpk]
    identifier: Mapped[str] = mapped_column(String(255), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    gn_description: Mapped[str] = mapped_column(String(255), default="")
    is_choice: Mapped[bool] = mapped_column(Boolean, default=True)
