"""upload size and parallelism limits, upload slots, management command jobs

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "upload_size_limits",
        sa.Column("slug", sa.String(length=255), nullable=False),
        sa.Column("description", sa.String(length=255), nullable=True),
        sa.Column("max_size", sa.BigInteger(), nullable=False),
        sa.Column("updated", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("slug", name=op.f("pk_upload_size_limits")),
    )
    op.create_table(
        "upload_parallelism_limits",
        sa.Column("slug", sa.String(length=255), nullable=False),
        sa.Column("description", sa.String(length=255), nullable=True),
        sa.Column("max_number", sa.Integer(), nullable=False),
        sa.Column("updated", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("slug", name=op.f("pk_upload_parallelism_limits")),
    )
    op.create_table(
        "upload_slots",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("created", sa.DateTime(), nullable=False),
        sa.Column("expires", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name=op.f("fk_upload_slots_user_id_users"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_upload_slots")),
    )
    op.create_index(op.f("ix_upload_slots_user_id"), "upload_slots", ["user_id"], unique=False)
    op.create_table(
        "management_command_jobs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("command", sa.String(length=250), nullable=False),
        sa.Column("app_name", sa.String(length=250), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("outcome", sa.String(length=16), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("start_time", sa.DateTime(), nullable=True),
        sa.Column("end_time", sa.DateTime(), nullable=True),
        sa.Column("modified_at", sa.DateTime(), nullable=False),
        sa.Column("args", sa.JSON(), nullable=False),
        sa.Column("kwargs", sa.JSON(), nullable=False),
        sa.Column("celery_result_id", sa.String(length=36), nullable=True),
        sa.Column("output_message", sa.Text(), nullable=True),
        sa.Column("stop_requested", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"],
                                name=op.f("fk_management_command_jobs_user_id_users"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_management_command_jobs")),
    )
    op.create_index("ix_management_command_jobs_created", "management_command_jobs", ["created_at", "id"],
                    unique=False)
    op.create_index("ix_management_command_jobs_command", "management_command_jobs",
                    ["command", "created_at"], unique=False)
    op.create_index("ix_management_command_jobs_status", "management_command_jobs",
                    ["status", "created_at"], unique=False)
    op.create_index(op.f("ix_management_command_jobs_user_id"), "management_command_jobs", ["user_id"],
                    unique=False)
    op.create_index(op.f("ix_management_command_jobs_celery_result_id"), "management_command_jobs",
                    ["celery_result_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_management_command_jobs_celery_result_id"), table_name="management_command_jobs")
    op.drop_index(op.f("ix_management_command_jobs_user_id"), table_name="management_command_jobs")
    op.drop_index("ix_management_command_jobs_status", table_name="management_command_jobs")
    op.drop_index("ix_management_command_jobs_command", table_name="management_command_jobs")
    op.drop_index("ix_management_command_jobs_created", table_name="management_command_jobs")
    op.drop_table("management_command_jobs")
    op.drop_index(op.f("ix_upload_slots_user_id"), table_name="upload_slots")
    op.drop_table("upload_slots")
    op.drop_table("upload_parallelism_limits")
    op.drop_table("upload_size_limits")
