"""maps and map layers

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23 14:58:02.880364
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('maps',
    sa.Column('resource_id', sa.Integer(), nullable=False),
    sa.Column('urlsuffix', sa.String(length=255), nullable=False),
    sa.Column('featuredurl', sa.String(length=255), nullable=False),
    sa.ForeignKeyConstraint(['resource_id'], ['resources.id'], name=op.f('fk_maps_resource_id_resources'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('resource_id', name=op.f('pk_maps'))
    )
    # A deleted dataset leaves its map layers in place with dataset_id NULL (GeoNode keeps them).
    op.create_table('map_layers',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('map_id', sa.Integer(), nullable=False),
    sa.Column('dataset_id', sa.Integer(), nullable=True),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('store', sa.String(length=255), nullable=True),
    sa.Column('current_style', sa.String(length=255), nullable=True),
    sa.Column('extra_params', sa.JSON(), nullable=True),
    sa.Column('order', sa.Integer(), nullable=False),
    sa.Column('visibility', sa.Boolean(), nullable=False),
    sa.Column('opacity', sa.Float(), nullable=False),
    sa.ForeignKeyConstraint(['dataset_id'], ['resources.id'], name=op.f('fk_map_layers_dataset_id_resources'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['map_id'], ['resources.id'], name=op.f('fk_map_layers_map_id_resources'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_map_layers'))
    )
    op.create_index(op.f('ix_map_layers_dataset_id'), 'map_layers', ['dataset_id'], unique=False)
    op.create_index('ix_map_layers_map_order', 'map_layers', ['map_id', 'order', 'id'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_map_layers_map_order', table_name='map_layers')
    op.drop_index(op.f('ix_map_layers_dataset_id'), table_name='map_layers')
    op.drop_table('map_layers')
    op.drop_table('maps')
