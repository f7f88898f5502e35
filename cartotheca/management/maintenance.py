"""cartotheca.management.maintenance: rebuild the search index, purge old executions, send notices.

``rebuild_index`` rebuilds what the catalogue's ``extent=`` and free-text searches read: on
SQLite the R*Tree of resource extents is filled again from the resources (in one transaction,
so searches never see it half full); on PostgreSQL the GiST and trigram (GIN) indexes of the
resources table are reindexed one by one, and the table analysed.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import delete, func, select, text

from cartotheca.catalogue import events
from cartotheca.db.base import utcnow
from cartotheca.db.models import ExecutionRequest
from cartotheca.management.registry import Command, CommandRun, Option

PURGE_BATCH = 1000


# -- rebuild_index -----------------------------------------------------------------------------


def rebuild_index(run: CommandRun, _options: dict[str, Any]) -> None:
    if run.session.get_bind().dialect.name == "sqlite":
        _refill_extent_tree(run)
    else:
        _reindex_postgresql(run)


def _refill_extent_tree(run: CommandRun) -> None:
    session = run.session
    run.checkpoint("clear the extent index")
    session.execute(text("DELETE FROM resources_extent"))
    run.checkpoint("fill the extent index")
    session.execute(text(
        "INSERT INTO resources_extent (id, minx, maxx, miny, maxy) "
        "SELECT id, ll_minx, ll_maxx, ll_miny, ll_maxy FROM resources WHERE ll_minx IS NOT NULL"))
    count = session.scalar(text("SELECT count(*) FROM resources_extent"))
    run.checkpoint("commit")
    session.commit()
    run.write(f"Extent index rebuilt: {count} resource extent(s).")


def _reindex_postgresql(run: CommandRun) -> None:
    session = run.session
    names = list(session.scalars(text(
        "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'resources' "
        "AND (indexdef ILIKE '%USING gist%' OR indexdef ILIKE '%USING gin%') ORDER BY indexname")))
    session.commit()
    for name in names:
        run.checkpoint(f"reindex {name}")
        session.execute(text(f'REINDEX INDEX "{name}"'))
        session.commit()
        run.write(f"Reindexed {name}.")
    run.checkpoint("analyse resources")
    session.execute(text("ANALYZE resources"))
    session.commit()
    run.write(f"Search indexes rebuilt: {len(names)} index(es).")


# -- purge_executions --------------------------------------------------------------------------


def purge_executions(run: CommandRun, options: dict[str, Any]) -> None:
    days = options["days"]
    cutoff = utcnow() - dt.timedelta(days=days)
    ended = func.coalesce(ExecutionRequest.finished, ExecutionRequest.last_updated)
    old = select(ExecutionRequest.id).where(ExecutionRequest.status.in_(("finished", "failed")),
                                            ended < cutoff).order_by(ExecutionRequest.id)
    total = 0
    while True:
        run.checkpoint(f"purge executions ({total} so far)")
        ids = list(run.session.scalars(old.limit(PURGE_BATCH)))
        if not ids:
            break
        run.session.execute(delete(ExecutionRequest).where(ExecutionRequest.id.in_(ids)))
        run.session.commit()
        total += len(ids)
    run.write(f"Purged {total} finished or failed execution(s) older than {days} day(s).")


# -- send_notifications ------------------------------------------------------------------------


def send_notifications(run: CommandRun, _options: dict[str, Any]) -> None:
    """Send the notices queued in the events outbox (PINAX_NOTIFICATIONS_QUEUE_ALL)."""
    run.checkpoint("send queued notifications")
    sent = events.send_queued(run.session, run.settings)
    run.session.commit()
    run.write(f"{sent} notification(s) sent.")


REBUILD_INDEX = Command(
    name="rebuild_index",
    app_name="cartotheca.search",
    help="Rebuild the search indexes: the resource extent R*Tree on SQLite; the GiST and trigram "
         "indexes of the resources on PostgreSQL.",
    run=rebuild_index,
)

PURGE_EXECUTIONS = Command(
    name="purge_executions",
    app_name="cartotheca.tasks",
    help="Delete the execution requests that finished or failed more than --days days ago.",
    run=purge_executions,
    options=(Option(("--days",), "days", "age in days of the executions to delete (default 30)",
                    type=int, default=30, metavar="N", minimum=0),),
)

SEND_NOTIFICATIONS = Command(
    name="send_notifications",
    app_name="cartotheca.events",
    help="Send the e-mail notifications queued for the periodic run (PINAX_NOTIFICATIONS_QUEUE_ALL); "
         "a failed one stays queued for the next run until its attempts are used up.",
    run=send_notifications,
)
