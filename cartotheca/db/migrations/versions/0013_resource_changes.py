"""the resource change feed: triggers append (seq, resource_id, xid) in the writer's transaction;
the catalogue index's shared snapshot

Revision ID: 0013
Revises: 0012
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

# What the catalogue index holds of a resource; an update touching none of these is no change.
RESOURCE_COLUMNS = ("owner_id", "is_published", "advertised", "is_approved", "resource_type",
                    "subtype", "category_id", "featured", "group_id")
# Link tables whose rows are facts of the resource they name.
LINKS = ("resource_keywords", "resource_regions", "resource_tkeywords")
VIEW = "view_resourcebase"


def upgrade() -> None:
    # UTC on both (the trim compares with a naive UTC time); PostgreSQL's CURRENT_TIMESTAMP
    # would be stored in the session's time zone.
    now = "(timezone('utc', now()))" if op.get_bind().dialect.name == "postgresql" else "CURRENT_TIMESTAMP"
    op.create_table(
        "resource_changes",
        sa.Column("seq", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True,
                  autoincrement=True),
        sa.Column("resource_id", sa.Integer(), nullable=False),
        sa.Column("xid", sa.BigInteger()),
        sa.Column("created", sa.DateTime(), nullable=False, server_default=sa.text(now)),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_resource_changes_created", "resource_changes", ["created"])
    op.create_table(
        "resource_change_trims",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("upto", sa.BigInteger(), nullable=False),
    )
    op.execute("INSERT INTO resource_change_trims (id, upto) VALUES (1, 0)")
    op.create_table(
        "catalogue_index_snapshots",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("watermark", sa.BigInteger(), nullable=False),
        sa.Column("written", sa.DateTime(), nullable=False),
        sa.Column("data", sa.LargeBinary()),
    )
    op.execute("INSERT INTO catalogue_index_snapshots (id, watermark, written) "
               "VALUES (1, 0, '2000-01-01 00:00:00')")
    if op.get_bind().dialect.name == "postgresql":
        _postgresql_triggers()
    else:
        _sqlite_triggers()


def _changed(prefix_old: str = "OLD", prefix_new: str = "NEW") -> str:
    return " OR ".join(f"{prefix_old}.{c} IS DISTINCT FROM {prefix_new}.{c}" for c in RESOURCE_COLUMNS)


def _postgresql_triggers() -> None:
    # txid_current() is the 64-bit (epoch-extended) id, comparable with the xmin/xmax of
    # txid_current_snapshot() that the index reads with each poll.
    op.execute("""
        CREATE FUNCTION record_resource_change() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_TABLE_NAME = 'resources' THEN
                IF TG_OP = 'DELETE' THEN
                    INSERT INTO resource_changes (resource_id, xid) VALUES (OLD.id, txid_current());
                ELSE
                    INSERT INTO resource_changes (resource_id, xid) VALUES (NEW.id, txid_current());
                END IF;
                RETURN NULL;
            END IF;
            IF TG_OP IN ('DELETE', 'UPDATE') THEN
                INSERT INTO resource_changes (resource_id, xid) VALUES (OLD.resource_id, txid_current());
            END IF;
            IF TG_OP IN ('INSERT', 'UPDATE') THEN
                INSERT INTO resource_changes (resource_id, xid) VALUES (NEW.resource_id, txid_current());
            END IF;
            RETURN NULL;
        END $$""")
    for name, when in (("ins", "INSERT"), ("del", "DELETE")):
        op.execute(f"CREATE TRIGGER resource_changes_{name} AFTER {when} ON resources "
                   "FOR EACH ROW EXECUTE FUNCTION record_resource_change()")
    op.execute(f"CREATE TRIGGER resource_changes_upd AFTER UPDATE ON resources FOR EACH ROW "
               f"WHEN ({_changed()}) EXECUTE FUNCTION record_resource_change()")
    for name, when, row in (("perm_ins", "INSERT", "NEW"), ("perm_del", "DELETE", "OLD")):
        op.execute(f"CREATE TRIGGER resource_changes_{name} AFTER {when} ON resource_permissions "
                   f"FOR EACH ROW WHEN ({row}.codename = '{VIEW}') "
                   "EXECUTE FUNCTION record_resource_change()")
    op.execute("CREATE TRIGGER resource_changes_perm_upd AFTER UPDATE ON resource_permissions "
               f"FOR EACH ROW WHEN (NEW.codename = '{VIEW}' OR OLD.codename = '{VIEW}') "
               "EXECUTE FUNCTION record_resource_change()")
    for link in LINKS:
        op.execute(f"CREATE TRIGGER resource_changes_{link} AFTER INSERT OR DELETE OR UPDATE ON {link} "
                   "FOR EACH ROW EXECUTE FUNCTION record_resource_change()")


def _sqlite_triggers() -> None:
    def insert(ref: str) -> str:
        return f"INSERT INTO resource_changes (resource_id) VALUES ({ref});"

    triggers = {
        "resources_ai": f"AFTER INSERT ON resources BEGIN {insert('new.id')} END",
        "resources_ad": f"AFTER DELETE ON resources BEGIN {insert('old.id')} END",
        "resources_au": f"AFTER UPDATE ON resources WHEN {_changed('old', 'new').replace('IS DISTINCT FROM', 'IS NOT')} "
                        f"BEGIN {insert('new.id')} END",
        "perm_ai": f"AFTER INSERT ON resource_permissions WHEN new.codename = '{VIEW}' "
                   f"BEGIN {insert('new.resource_id')} END",
        "perm_ad": f"AFTER DELETE ON resource_permissions WHEN old.codename = '{VIEW}' "
                   f"BEGIN {insert('old.resource_id')} END",
        "perm_au": f"AFTER UPDATE ON resource_permissions WHEN new.codename = '{VIEW}' OR old.codename = '{VIEW}' "
                   f"BEGIN {insert('old.resource_id')} {insert('new.resource_id')} END",
    }
    for link in LINKS:
        triggers[f"{link}_ai"] = f"AFTER INSERT ON {link} BEGIN {insert('new.resource_id')} END"
        triggers[f"{link}_ad"] = f"AFTER DELETE ON {link} BEGIN {insert('old.resource_id')} END"
        triggers[f"{link}_au"] = (f"AFTER UPDATE ON {link} BEGIN {insert('old.resource_id')} "
                                  f"{insert('new.resource_id')} END")
    for name, body in triggers.items():
        op.execute(f"CREATE TRIGGER resource_changes_{name} {body}")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for name, table in (("ins", "resources"), ("del", "resources"), ("upd", "resources"),
                            ("perm_ins", "resource_permissions"), ("perm_del", "resource_permissions"),
                            ("perm_upd", "resource_permissions"),
                            *((link, link) for link in LINKS)):
            op.execute(f"DROP TRIGGER IF EXISTS resource_changes_{name} ON {table}")
        op.execute("DROP FUNCTION IF EXISTS record_resource_change()")
    else:
        names = ["resources_ai", "resources_ad", "resources_au", "perm_ai", "perm_ad", "perm_au"]
        names += [f"{link}_{s}" for link in LINKS for s in ("ai", "ad", "au")]
        for name in names:
            op.execute(f"DROP TRIGGER IF EXISTS resource_changes_{name}")
    op.drop_table("catalogue_index_snapshots")
    op.drop_table("resource_change_trims")
    op.drop_index("ix_resource_changes_created", table_name="resource_changes")
    op.drop_table("resource_changes")
