"""trigram indexes for free-text search on PostgreSQL

Revision ID: 0003
Revises: 0002
"""

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

# On PostgreSQL ``search`` and the i-operators compile to ``column ILIKE '%term%'``, which a
# trigram index on the column serves. SQLite has no equivalent for infix LIKE and scans.
INDEXES = {
    "ix_resources_title_trgm": "title",
    "ix_resources_abstract_trgm": "abstract",
}


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    for name, expression in INDEXES.items():
        op.execute(f"CREATE INDEX {name} ON resources USING gin ({expression} gin_trgm_ops)")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for name in INDEXES:
        op.execute(f"DROP INDEX IF EXISTS {name}")
