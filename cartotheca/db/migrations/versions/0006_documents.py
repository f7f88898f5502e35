"""documents, linked resources, extra metadata, ratings and the map client's resources

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 14:33:42.133053
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('documents',
    sa.Column('resource_id', sa.Integer(), nullable=False),
    sa.Column('extension', sa.String(length=16), nullable=False),
    sa.Column('mime_type', sa.String(length=128), nullable=False),
    sa.Column('doc_url', sa.String(length=2048), nullable=True),
    sa.Column('file_path', sa.String(length=1024), nullable=True),
    sa.Column('file_name', sa.String(length=255), nullable=True),
    sa.Column('file_size', sa.BigInteger(), nullable=True),
    sa.Column('sha256', sa.String(length=64), nullable=True),
    sa.ForeignKeyConstraint(['resource_id'], ['resources.id'], name=op.f('fk_documents_resource_id_resources'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('resource_id', name=op.f('pk_documents'))
    )
    op.create_table('linked_resources',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('source_id', sa.Integer(), nullable=False),
    sa.Column('target_id', sa.Integer(), nullable=False),
    sa.Column('internal', sa.Boolean(), nullable=False),
    sa.Column('created', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['source_id'], ['resources.id'], name=op.f('fk_linked_resources_source_id_resources'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['target_id'], ['resources.id'], name=op.f('fk_linked_resources_target_id_resources'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_linked_resources')),
    sa.UniqueConstraint('source_id', 'target_id', name=op.f('uq_linked_resources_source_id'))
    )
    op.create_index('ix_linked_resources_target', 'linked_resources', ['target_id', 'source_id'], unique=False)
    op.create_table('extra_metadata',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('resource_id', sa.Integer(), nullable=False),
    sa.Column('metadata', sa.JSON(), nullable=False),
    sa.Column('created', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['resource_id'], ['resources.id'], name=op.f('fk_extra_metadata_resource_id_resources'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_extra_metadata'))
    )
    op.create_index(op.f('ix_extra_metadata_resource_id'), 'extra_metadata', ['resource_id'], unique=False)
    op.create_table('ratings',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('resource_id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('rating', sa.Integer(), nullable=False),
    sa.Column('created', sa.DateTime(), nullable=False),
    sa.Column('updated', sa.DateTime(), nullable=False),
    sa.CheckConstraint('rating BETWEEN 1 AND 5', name=op.f('ck_ratings_range')),
    sa.ForeignKeyConstraint(['resource_id'], ['resources.id'], name=op.f('fk_ratings_resource_id_resources'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_ratings_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_ratings')),
    sa.UniqueConstraint('resource_id', 'user_id', name=op.f('uq_ratings_resource_id'))
    )
    op.create_index(op.f('ix_ratings_user_id'), 'ratings', ['user_id'], unique=False)
    op.create_table('mapclient_resources',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('data', sa.JSON(), nullable=True),
    sa.Column('attributes', sa.JSON(), nullable=False),
    sa.Column('creation_date', sa.DateTime(), nullable=False),
    sa.Column('last_update', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_mapclient_resources_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_mapclient_resources'))
    )
    op.create_index(op.f('ix_mapclient_resources_user_id'), 'mapclient_resources', ['user_id'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_mapclient_resources_user_id'), table_name='mapclient_resources')
    op.drop_table('mapclient_resources')
    op.drop_index(op.f('ix_ratings_user_id'), table_name='ratings')
    op.drop_table('ratings')
    op.drop_index(op.f('ix_extra_metadata_resource_id'), table_name='extra_metadata')
    op.drop_table('extra_metadata')
    op.drop_index('ix_linked_resources_target', table_name='linked_resources')
    op.drop_table('linked_resources')
    op.drop_table('documents')
