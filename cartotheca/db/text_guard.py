"""cartotheca.db.text_guard: no session stores text that XML or PostgreSQL cannot carry.

The API refuses such text where it reads request bodies, naming the client's field; this guard
covers every other way text reaches the catalogue (uploaded files, harvested records, commands)
on SQLite as on PostgreSQL, so no stored value can break a capabilities document later. Only
values being written are checked: a row stored earlier can still be edited in its other fields.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, String, event, inspect
from sqlalchemy.orm import Session, sessionmaker

from cartotheca import xmlsafe


def install(factory: sessionmaker[Session]) -> None:
    event.listen(factory, "before_flush", _check_written_text)


def _check_written_text(session: Session, _context: Any, _instances: Any) -> None:
    for instance in (*session.new, *session.dirty):
        state = inspect(instance)
        for prop in state.mapper.column_attrs:
            if not isinstance(prop.columns[0].type, String | JSON):
                continue
            for value in state.attrs[prop.key].history.added:
                xmlsafe.check_text(value, prop.key)
