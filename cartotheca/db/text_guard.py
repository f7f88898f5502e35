"""cartotheca.db.text_guard: no session stores text that XML or PostgreSQL cannot carry.

Clients' text is refused where the API reads it (request bodies, multipart fields, ingest
options, data files' field names), naming the field. This guard covers every other way text
reaches the catalogue (harvested records, messages of failed jobs, commands) on SQLite as on
PostgreSQL: such characters are dropped from the values being written, so that no stored
value can break a capabilities document later and no background write fails over one.
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import JSON, String, event, inspect
from sqlalchemy.orm import Session, sessionmaker

from cartotheca import xmlsafe

log = logging.getLogger("cartotheca.db")


def install(factory: sessionmaker[Session]) -> None:
    event.listen(factory, "before_flush", _clean_written_text)


def _clean_written_text(session: Session, _context: Any, _instances: Any) -> None:
    for instance in (*session.new, *session.dirty):
        state = inspect(instance)
        for prop in state.mapper.column_attrs:
            if not isinstance(prop.columns[0].type, String | JSON):
                continue
            for value in state.attrs[prop.key].history.added:
                cleaned = xmlsafe.clean_all(value)
                if cleaned != value:
                    log.info("characters XML cannot carry dropped from %s.%s",
                             state.mapper.class_.__name__, prop.key)
                    setattr(instance, prop.key, cleaned)
