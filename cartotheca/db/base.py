"""cartotheca.db.base: the declarative base and shared column declarations."""

from __future__ import annotations

import datetime as dt
import uuid as uuid_mod
from typing import Annotated, Any

from sqlalchemy import JSON, DateTime, Integer, MetaData, String
from sqlalchemy.orm import DeclarativeBase, mapped_column

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def new_uuid() -> str:
    return str(uuid_mod.uuid4())


intpk = Annotated[int, mapped_column(primary_key=True, autoincrement=True)]
created_at = Annotated[dt.datetime, mapped_column(default=utcnow, nullable=False)]
updated_at = Annotated[dt.datetime, mapped_column(default=utcnow, onupdate=utcnow, nullable=False)]
uuid_str = Annotated[str, mapped_column(String(36), default=new_uuid, unique=True, nullable=False)]


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    # Timestamps are stored naive in UTC: SQLite has no time zones, and one rule for both
    # databases keeps comparisons in filters identical.
    type_annotation_map = {
        dt.datetime: DateTime(timezone=False),
        dict[str, Any]: JSON,
        list[Any]: JSON,
        str: String(255),
        int: Integer,
    }
