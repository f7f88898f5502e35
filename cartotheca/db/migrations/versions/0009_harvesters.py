"""harvesters, harvesting_sessions, harvestable_resources

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "harvesters",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("remote_url", sa.String(length=2048), nullable=False),
        sa.Column("harvester_type", sa.String(length=64), nullable=False),
        sa.Column("harvester_type_specific_configuration", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=64), nullable=False),
        sa.Column("remote_available", sa.Boolean(), nullable=False),
        sa.Column("scheduling_enabled", sa.Boolean(), nullable=False),
        sa.Column("harvesting_session_update_frequency", sa.Integer(), nullable=False),
        sa.Column("refresh_harvestable_resources_update_frequency", sa.Integer(), nullable=False),
        sa.Column("check_availability_frequency", sa.Integer(), nullable=False),
        sa.Column("default_owner_id", sa.Integer(), nullable=False),
        sa.Column("harvest_new_resources_by_default", sa.Boolean(), nullable=False),
        sa.Column("delete_orphan_resources_automatically", sa.Boolean(), nullable=False),
        sa.Column("last_checked_availability", sa.DateTime(), nullable=True),
        sa.Column("last_checked_harvestable_resources", sa.DateTime(), nullable=True),
        sa.Column("last_check_harvestable_resources_message", sa.Text(), nullable=False),
        sa.Column("last_harvesting_started", sa.DateTime(), nullable=True),
        sa.Column("last_updated", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["default_owner_id"], ["users.id"],
                                name=op.f("fk_harvesters_default_owner_id_users"), ondelete="RESTRICT"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_harvesters")),
        sa.UniqueConstraint("name", name=op.f("uq_harvesters_name")),
    )
    op.create_index(op.f("ix_harvesters_default_owner_id"), "harvesters", ["default_owner_id"],
                    unique=False)
    op.create_table(
        "harvestable_resources",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("harvester_id", sa.Integer(), nullable=False),
        sa.Column("unique_identifier", sa.String(length=255), nullable=False),
        sa.Column("title", sa.String(length=255), nullable=False),
        sa.Column("remote_resource_type", sa.String(length=64), nullable=False),
        sa.Column("should_be_harvested", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(length=64), nullable=False),
        sa.Column("remote_last_updated", sa.DateTime(), nullable=True),
        sa.Column("remote_data", sa.JSON(), nullable=False),
        sa.Column("content_hash", sa.String(length=64), nullable=True),
        sa.Column("harvested_hash", sa.String(length=64), nullable=True),
        sa.Column("resource_id", sa.Integer(), nullable=True),
        sa.Column("last_harvested", sa.DateTime(), nullable=True),
        sa.Column("last_harvesting_message", sa.Text(), nullable=False),
        sa.Column("last_updated", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["harvester_id"], ["harvesters.id"],
                                name=op.f("fk_harvestable_resources_harvester_id_harvesters"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["resource_id"], ["resources.id"],
                                name=op.f("fk_harvestable_resources_resource_id_resources"),
                                ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_harvestable_resources")),
        sa.UniqueConstraint("harvester_id", "unique_identifier",
                            name=op.f("uq_harvestable_resources_harvester_id")),
    )
    op.create_index("ix_harvestable_resources_harvester_title", "harvestable_resources",
                    ["harvester_id", "title", "id"], unique=False)
    op.create_index(op.f("ix_harvestable_resources_resource_id"), "harvestable_resources",
                    ["resource_id"], unique=False)
    op.create_table(
        "harvesting_sessions",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("harvester_id", sa.Integer(), nullable=False),
        sa.Column("session_type", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("started", sa.DateTime(), nullable=False),
        sa.Column("updated", sa.DateTime(), nullable=False),
        sa.Column("ended", sa.DateTime(), nullable=True),
        sa.Column("total_records_to_process", sa.Integer(), nullable=False),
        sa.Column("records_done", sa.Integer(), nullable=False),
        sa.Column("session_details", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["harvester_id"], ["harvesters.id"],
                                name=op.f("fk_harvesting_sessions_harvester_id_harvesters"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_harvesting_sessions")),
    )
    op.create_index("ix_harvesting_sessions_harvester", "harvesting_sessions", ["harvester_id", "id"],
                    unique=False)


def downgrade() -> None:
    op.drop_index("ix_harvesting_sessions_harvester", table_name="harvesting_sessions")
    op.drop_table("harvesting_sessions")
    op.drop_index(op.f("ix_harvestable_resources_resource_id"), table_name="harvestable_resources")
    op.drop_index("ix_harvestable_resources_harvester_title", table_name="harvestable_resources")
    op.drop_table("harvestable_resources")
    op.drop_index(op.f("ix_harvesters_default_owner_id"), table_name="harvesters")
    op.drop_table("harvesters")
