"""cartotheca.db.models.maps: what a map adds to its resource record: its own fields and its layers.

A map is a ``resources`` row (resource_type ``map``, the client's configuration in ``blob``), an
optional ``maps`` row (GeoNode's ``urlsuffix``/``featuredurl``) and its ``map_layers``, each
showing one dataset. A layer keeps its row when its dataset is deleted, with ``dataset_id``
NULL, as GeoNode does: the map still lists the layer by name, and draws nothing for it.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Boolean, Float, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from cartotheca.db.base import Base, intpk


class Map(Base):
    __tablename__ = "maps"

    resource_id: Mapped[int] = mapped_column(
        ForeignKey("resources.id", ondelete="CASCADE"), primary_key=True
    )
    urlsuffix: Mapped[str] = mapped_column(String(255), default="")
    featuredurl: Mapped[str] = mapped_column(String(255), default="")


class MapLayer(Base):
    """One layer of a map: a dataset (by id, and by name as the client wrote it), its style,
    stacking order (lowest drawn first), visibility, opacity and the client's extra parameters."""

    __tablename__ = "map_layers"
    __table_args__ = (Index("ix_map_layers_map_order", "map_id", "order", "id"),)

    id: Mapped[intpk]
    map_id: Mapped[int] = mapped_column(ForeignKey("resources.id", ondelete="CASCADE"))
    dataset_id: Mapped[int | None] = mapped_column(
        ForeignKey("resources.id", ondelete="SET NULL"), index=True
    )
    name: Mapped[str] = mapped_column(String(255))
    store: Mapped[str | None] = mapped_column(String(255))
    current_style: Mapped[str | None] = mapped_column(String(255))
    extra_params: Mapped[dict[str, Any] | None]
    order: Mapped[int] = mapped_column(default=0)
    visibility: Mapped[bool] = mapped_column(Boolean, default=True)
    opacity: Mapped[float] = mapped_column(Float, default=1.0)
