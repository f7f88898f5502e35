"""datasets, their attributes and styles, and upload records

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23 13:43:10.507595
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('datasets',
    sa.Column('resource_id', sa.Integer(), nullable=False),
    sa.Column('workspace', sa.String(length=64), nullable=False),
    sa.Column('name', sa.String(length=128), nullable=False),
    sa.Column('store', sa.String(length=128), nullable=False),
    sa.Column('storage', sa.String(length=16), nullable=False),
    sa.Column('location', sa.String(length=1024), nullable=False),
    sa.Column('layer', sa.String(length=255), nullable=False),
    sa.Column('geometry_column', sa.String(length=128), nullable=True),
    sa.Column('geometry_type', sa.String(length=32), nullable=True),
    sa.Column('fid_column', sa.String(length=128), nullable=True),
    sa.Column('feature_count', sa.Integer(), nullable=True),
    sa.Column('native_crs', sa.Text(), nullable=True),
    sa.Column('native_srid', sa.Integer(), nullable=True),
    sa.Column('charset', sa.String(length=32), nullable=False),
    sa.Column('has_time', sa.Boolean(), nullable=False),
    sa.Column('time_attribute', sa.String(length=128), nullable=True),
    sa.Column('time_end_attribute', sa.String(length=128), nullable=True),
    sa.Column('time_regex', sa.String(length=128), nullable=True),
    sa.Column('has_elevation', sa.Boolean(), nullable=False),
    sa.Column('elevation_regex', sa.String(length=128), nullable=True),
    sa.Column('is_mosaic', sa.Boolean(), nullable=False),
    sa.Column('ptype', sa.String(length=64), nullable=False),
    sa.Column('featureinfo_custom_template', sa.Text(), nullable=True),
    sa.Column('raster_info', sa.JSON(), nullable=True),
    sa.Column('source_files', sa.JSON(), nullable=True),
    sa.ForeignKeyConstraint(['resource_id'], ['resources.id'], name=op.f('fk_datasets_resource_id_resources'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('resource_id', name=op.f('pk_datasets')),
    sa.UniqueConstraint('workspace', 'name', name=op.f('uq_datasets_workspace'))
    )
    op.create_table('uploads',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('title', sa.String(length=255), nullable=True),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('complete', sa.Boolean(), nullable=False),
    sa.Column('create_date', sa.DateTime(), nullable=False),
    sa.Column('date', sa.DateTime(), nullable=False),
    sa.Column('exec_id', sa.String(length=36), nullable=True),
    sa.Column('resource_id', sa.Integer(), nullable=True),
    sa.Column('files', sa.JSON(), nullable=True),
    sa.Column('size', sa.Integer(), nullable=False),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('bbox', sa.JSON(), nullable=True),
    sa.Column('srid', sa.String(length=30), nullable=True),
    sa.ForeignKeyConstraint(['resource_id'], ['resources.id'], name=op.f('fk_uploads_resource_id_resources'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_uploads_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_uploads'))
    )
    with op.batch_alter_table('uploads', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_uploads_exec_id'), ['exec_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_uploads_resource_id'), ['resource_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_uploads_state'), ['state'], unique=False)
        batch_op.create_index('ix_uploads_user_created', ['user_id', 'create_date'], unique=False)

    op.create_table('dataset_attributes',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('dataset_id', sa.Integer(), nullable=False),
    sa.Column('attribute', sa.String(length=255), nullable=False),
    sa.Column('description', sa.Text(), nullable=True),
    sa.Column('attribute_label', sa.String(length=255), nullable=True),
    sa.Column('attribute_type', sa.String(length=64), nullable=False),
    sa.Column('visible', sa.Boolean(), nullable=False),
    sa.Column('display_order', sa.Integer(), nullable=False),
    sa.Column('featureinfo_type', sa.String(length=32), nullable=False),
    sa.Column('count', sa.Integer(), nullable=False),
    sa.Column('min', sa.String(length=255), nullable=False),
    sa.Column('max', sa.String(length=255), nullable=False),
    sa.Column('average', sa.String(length=255), nullable=False),
    sa.Column('median', sa.String(length=255), nullable=False),
    sa.Column('stddev', sa.String(length=255), nullable=False),
    sa.Column('sum', sa.String(length=255), nullable=False),
    sa.Column('unique_values', sa.Text(), nullable=False),
    sa.Column('last_stats_updated', sa.DateTime(), nullable=True),
    sa.ForeignKeyConstraint(['dataset_id'], ['datasets.resource_id'], name=op.f('fk_dataset_attributes_dataset_id_datasets'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_dataset_attributes'))
    )
    with op.batch_alter_table('dataset_attributes', schema=None) as batch_op:
        batch_op.create_index('ix_dataset_attributes_dataset', ['dataset_id', 'display_order'], unique=False)

    op.create_table('styles',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('dataset_id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('workspace', sa.String(length=64), nullable=False),
    sa.Column('sld_title', sa.String(length=255), nullable=True),
    sa.Column('sld_body', sa.Text(), nullable=False),
    sa.Column('is_default', sa.Boolean(), nullable=False),
    sa.Column('created', sa.DateTime(), nullable=False),
    sa.Column('last_updated', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['dataset_id'], ['datasets.resource_id'], name=op.f('fk_styles_dataset_id_datasets'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_styles')),
    sa.UniqueConstraint('workspace', 'name', name=op.f('uq_styles_workspace'))
    )
    with op.batch_alter_table('styles', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_styles_dataset_id'), ['dataset_id'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('styles', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_styles_dataset_id'))

    op.drop_table('styles')
    with op.batch_alter_table('dataset_attributes', schema=None) as batch_op:
        batch_op.drop_index('ix_dataset_attributes_dataset')

    op.drop_table('dataset_attributes')
    with op.batch_alter_table('uploads', schema=None) as batch_op:
        batch_op.drop_index('ix_uploads_user_created')
        batch_op.drop_index(batch_op.f('ix_uploads_state'))
        batch_op.drop_index(batch_op.f('ix_uploads_resource_id'))
        batch_op.drop_index(batch_op.f('ix_uploads_exec_id'))

    op.drop_table('uploads')
    op.drop_table('datasets')
