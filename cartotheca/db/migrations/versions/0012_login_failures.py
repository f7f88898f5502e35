"""failed logins per lockout key, shared by all server processes

Revision ID: 0012
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "login_failures",
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("last_failure", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_login_failures")),
    )
    op.create_index(op.f("ix_login_failures_last_failure"), "login_failures", ["last_failure"])


def downgrade() -> None:
    op.drop_index(op.f("ix_login_failures_last_failure"), table_name="login_failures")
    op.drop_table("login_failures")
