"""How the visibility clause reads on PostgreSQL: the whole granted set for counts, row by row
for the first pages."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select, text

from cartotheca.catalogue import permissions as perms
from cartotheca.catalogue.auth import Principal
from cartotheca.db.models import Resource
from tests.factories import make_group, make_resource, make_user

ROWS = 5_000


def _plan(db, stmt) -> str:
    sql = stmt.compile(db.get_bind(), compile_kwargs={"literal_binds": True})
    return "\n".join(db.scalars(text(f"EXPLAIN {sql}")))


def test_first_pages_check_grants_row_by_row_while_counts_hash_them(db, settings, backend):
    if backend != "postgresql":
        pytest.skip("the hashed set is PostgreSQL's plan; SQLite checks every EXISTS row by row")
    team = make_group(db, "Team")
    viewer = make_user(db, "viewer")
    template = make_resource(db, settings, make_user(db, "owner"), "template", public=False,
                             shared_with_group=team)
    db.commit()
    # Many resources shared with the viewer's group, copied from one made the usual way.
    columns = [c for c in db.scalars(text(
        "SELECT column_name FROM information_schema.columns "
        "WHERE table_name = 'resources' AND column_name NOT IN ('id', 'uuid', 'created')"))]
    listed = ", ".join(columns)
    db.execute(text(
        f"INSERT INTO resources (uuid, created, {listed}) "
        f"SELECT gen_random_uuid()::text, created + n * interval '1 second', {listed} "
        f"FROM resources, generate_series(1, {ROWS}) AS n WHERE id = :id"), {"id": template.id})
    db.execute(text(
        "INSERT INTO resource_permissions (resource_id, group_id, codename) "
        "SELECT id, :group, 'view_resourcebase' FROM resources WHERE id > :id"),
        {"group": team.id, "id": template.id})
    db.commit()
    db.execute(text("ANALYZE resources"))
    db.execute(text("ANALYZE resource_permissions"))
    principal = Principal(user=viewer, group_ids=frozenset({team.id}))

    counted = select(func.count()).select_from(Resource).where(perms.visible_to(principal, settings))
    walked = (select(Resource.id).where(perms.visible_to(principal, settings, row_by_row=True))
              .order_by(Resource.created.desc(), Resource.id.desc()).limit(20))
    hashed_walk = (select(Resource.id).where(perms.visible_to(principal, settings))
                   .order_by(Resource.created.desc(), Resource.id.desc()).limit(20))

    # Without the row-by-row form, even a page of 20 hashes every granted id first ...
    assert "hashed SubPlan" in _plan(db, hashed_walk)
    # ... which is right for a count over them all, and what the first pages avoid.
    assert "hashed SubPlan" in _plan(db, counted)
    walked_plan = _plan(db, walked)
    assert "hashed SubPlan" not in walked_plan and "SubPlan" in walked_plan
    assert [r for r in db.scalars(walked)] == [r for r in db.scalars(hashed_walk)]
