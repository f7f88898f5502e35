"""cartotheca.db.models.mapclient: the web map client's own saved resources (one user's data each)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from cartotheca.db.base import Base, created_at, intpk, utcnow


class MapClientResource(Base):
    """A client configuration blob with named attributes (MapStore's ``MapStoreResource``)."""

    __tablename__ = "mapclient_resources"

    id: Mapped[intpk]
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(255))
    data: Mapped[dict[str, Any] | None]
    # [{"name", "type", "label", "value"}] with string values
    attributes: Mapped[list[Any]] = mapped_column(default=list)
    creation_date: Mapped[created_at]
    last_update: Mapped[dt.datetime] = mapped_column(default=utcnow, onupdate=utcnow)
