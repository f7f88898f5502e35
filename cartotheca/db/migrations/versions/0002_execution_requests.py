"""execution requests

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "execution_requests",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("exec_id", sa.String(length=36), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("func_name", sa.String(length=64), nullable=False),
        sa.Column("action", sa.String(length=32), nullable=False),
        sa.Column("source", sa.String(length=64), nullable=True),
        sa.Column("name", sa.String(length=255), nullable=True),
        sa.Column("step", sa.String(length=255), nullable=True),
        sa.Column("log", sa.Text(), nullable=True),
        sa.Column("input_params", sa.JSON(), nullable=False),
        sa.Column("output_params", sa.JSON(), nullable=False),
        sa.Column("resource_id", sa.Integer(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("worker", sa.String(length=255), nullable=True),
        sa.Column("heartbeat", sa.DateTime(), nullable=True),
        sa.Column("created", sa.DateTime(), nullable=False),
        sa.Column("finished", sa.DateTime(), nullable=True),
        sa.Column("last_updated", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["resource_id"], ["resources.id"],
                                name=op.f("fk_execution_requests_resource_id_resources"),
                                ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"],
                                name=op.f("fk_execution_requests_user_id_users"), ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_execution_requests")),
        sa.UniqueConstraint("exec_id", name=op.f("uq_execution_requests_exec_id")),
    )
    with op.batch_alter_table("execution_requests") as batch_op:
        batch_op.create_index("ix_execution_requests_status", ["status", "created"])
        batch_op.create_index("ix_execution_requests_user", ["user_id", "created"])
        batch_op.create_index(op.f("ix_execution_requests_resource_id"), ["resource_id"])


def downgrade() -> None:
    op.drop_table("execution_requests")
