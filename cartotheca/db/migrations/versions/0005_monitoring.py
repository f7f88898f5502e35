"""monitoring: hosts, services, request events, metric values, exceptions, notification checks

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 13:56:34.103444
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('monitoring_hosts',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('ip', sa.String(length=64), nullable=False),
    sa.Column('active', sa.Boolean(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_monitoring_hosts')),
    sa.UniqueConstraint('name', name=op.f('uq_monitoring_hosts_name'))
    )
    op.create_table('monitoring_labels',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('user', sa.String(length=150), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_monitoring_labels')),
    sa.UniqueConstraint('name', name=op.f('uq_monitoring_labels_name'))
    )
    op.create_table('monitoring_metrics',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('name', sa.String(length=64), nullable=False),
    sa.Column('metric_type', sa.String(length=16), nullable=False),
    sa.Column('unit', sa.String(length=16), nullable=False),
    sa.Column('description', sa.String(length=255), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_monitoring_metrics')),
    sa.UniqueConstraint('name', name=op.f('uq_monitoring_metrics_name'))
    )
    op.create_table('monitoring_notification_checks',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('description', sa.Text(), nullable=False),
    sa.Column('user_threshold', sa.JSON(), nullable=False),
    sa.Column('last_send', sa.DateTime(), nullable=True),
    sa.Column('grace_period', sa.Integer(), nullable=False),
    sa.Column('severity', sa.String(length=16), nullable=False),
    sa.Column('active', sa.Boolean(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_monitoring_notification_checks')),
    sa.UniqueConstraint('name', name=op.f('uq_monitoring_notification_checks_name'))
    )
    op.create_table('monitoring_resources',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('type', sa.String(length=32), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('resource_id', sa.Integer(), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_monitoring_resources')),
    sa.UniqueConstraint('type', 'name', name=op.f('uq_monitoring_resources_type'))
    )
    op.create_table('monitoring_notification_definitions',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('check_id', sa.Integer(), nullable=False),
    sa.Column('metric_id', sa.Integer(), nullable=False),
    sa.Column('field_option', sa.String(length=16), nullable=False),
    sa.Column('description', sa.Text(), nullable=False),
    sa.Column('use_service', sa.Boolean(), nullable=False),
    sa.Column('use_resource', sa.Boolean(), nullable=False),
    sa.Column('use_label', sa.Boolean(), nullable=False),
    sa.Column('use_event_type', sa.Boolean(), nullable=False),
    sa.Column('min_value', sa.Float(), nullable=True),
    sa.Column('max_value', sa.Float(), nullable=True),
    sa.Column('steps', sa.Integer(), nullable=True),
    sa.ForeignKeyConstraint(['check_id'], ['monitoring_notification_checks.id'], name=op.f('fk_monitoring_notification_definitions_check_id_monitoring_notification_checks'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['metric_id'], ['monitoring_metrics.id'], name=op.f('fk_monitoring_notification_definitions_metric_id_monitoring_metrics'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_monitoring_notification_definitions')),
    sa.UniqueConstraint('check_id', 'metric_id', 'field_option', name=op.f('uq_monitoring_notification_definitions_check_id'))
    )
    op.create_table('monitoring_notification_receivers',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('check_id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=True),
    sa.Column('email', sa.String(length=254), nullable=True),
    sa.ForeignKeyConstraint(['check_id'], ['monitoring_notification_checks.id'], name=op.f('fk_monitoring_notification_receivers_check_id_monitoring_notification_checks'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_monitoring_notification_receivers_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_monitoring_notification_receivers'))
    )
    with op.batch_alter_table('monitoring_notification_receivers', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_monitoring_notification_receivers_check_id'), ['check_id'], unique=False)

    op.create_table('monitoring_services',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('service_type', sa.String(length=32), nullable=False),
    sa.Column('host_id', sa.Integer(), nullable=False),
    sa.Column('check_interval', sa.Integer(), nullable=False),
    sa.Column('last_check', sa.DateTime(), nullable=True),
    sa.Column('active', sa.Boolean(), nullable=False),
    sa.Column('url', sa.String(length=1024), nullable=True),
    sa.Column('notes', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['host_id'], ['monitoring_hosts.id'], name=op.f('fk_monitoring_services_host_id_monitoring_hosts'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_monitoring_services')),
    sa.UniqueConstraint('name', name=op.f('uq_monitoring_services_name'))
    )
    op.create_table('monitoring_collections',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('service_id', sa.Integer(), nullable=False),
    sa.Column('valid_from', sa.DateTime(), nullable=False),
    sa.Column('valid_to', sa.DateTime(), nullable=False),
    sa.Column('collected_at', sa.DateTime(), nullable=False),
    sa.Column('collector', sa.String(length=255), nullable=False),
    sa.ForeignKeyConstraint(['service_id'], ['monitoring_services.id'], name=op.f('fk_monitoring_collections_service_id_monitoring_services'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_monitoring_collections')),
    sa.UniqueConstraint('service_id', 'valid_from', 'valid_to', name=op.f('uq_monitoring_collections_service_id'))
    )
    with op.batch_alter_table('monitoring_collections', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_monitoring_collections_valid_to'), ['valid_to'], unique=False)

    op.create_table('monitoring_metric_checks',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('check_id', sa.Integer(), nullable=False),
    sa.Column('metric_id', sa.Integer(), nullable=False),
    sa.Column('definition_id', sa.Integer(), nullable=True),
    sa.Column('service_id', sa.Integer(), nullable=True),
    sa.Column('resource_id', sa.Integer(), nullable=True),
    sa.Column('label_id', sa.Integer(), nullable=True),
    sa.Column('event_type', sa.String(length=32), nullable=True),
    sa.Column('min_value', sa.Float(), nullable=True),
    sa.Column('max_value', sa.Float(), nullable=True),
    sa.Column('max_timeout', sa.Integer(), nullable=True),
    sa.Column('active', sa.Boolean(), nullable=False),
    sa.ForeignKeyConstraint(['check_id'], ['monitoring_notification_checks.id'], name=op.f('fk_monitoring_metric_checks_check_id_monitoring_notification_checks'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['definition_id'], ['monitoring_notification_definitions.id'], name=op.f('fk_monitoring_metric_checks_definition_id_monitoring_notification_definitions'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['label_id'], ['monitoring_labels.id'], name=op.f('fk_monitoring_metric_checks_label_id_monitoring_labels'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['metric_id'], ['monitoring_metrics.id'], name=op.f('fk_monitoring_metric_checks_metric_id_monitoring_metrics'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['resource_id'], ['monitoring_resources.id'], name=op.f('fk_monitoring_metric_checks_resource_id_monitoring_resources'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['service_id'], ['monitoring_services.id'], name=op.f('fk_monitoring_metric_checks_service_id_monitoring_services'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_monitoring_metric_checks')),
    sa.UniqueConstraint('definition_id', name=op.f('uq_monitoring_metric_checks_definition_id'))
    )
    with op.batch_alter_table('monitoring_metric_checks', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_monitoring_metric_checks_check_id'), ['check_id'], unique=False)

    op.create_table('monitoring_metric_values',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('valid_from', sa.DateTime(), nullable=False),
    sa.Column('valid_to', sa.DateTime(), nullable=False),
    sa.Column('service_id', sa.Integer(), nullable=False),
    sa.Column('metric_id', sa.Integer(), nullable=False),
    sa.Column('event_type', sa.String(length=32), nullable=False),
    sa.Column('resource_id', sa.Integer(), nullable=False),
    sa.Column('label_id', sa.Integer(), nullable=False),
    sa.Column('value', sa.String(length=255), nullable=False),
    sa.Column('value_num', sa.Float(), nullable=False),
    sa.Column('samples_count', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['label_id'], ['monitoring_labels.id'], name=op.f('fk_monitoring_metric_values_label_id_monitoring_labels'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['metric_id'], ['monitoring_metrics.id'], name=op.f('fk_monitoring_metric_values_metric_id_monitoring_metrics'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['resource_id'], ['monitoring_resources.id'], name=op.f('fk_monitoring_metric_values_resource_id_monitoring_resources'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['service_id'], ['monitoring_services.id'], name=op.f('fk_monitoring_metric_values_service_id_monitoring_services'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_monitoring_metric_values')),
    sa.UniqueConstraint('valid_from', 'valid_to', 'service_id', 'metric_id', 'event_type', 'resource_id', 'label_id', name=op.f('uq_monitoring_metric_values_valid_from'))
    )
    with op.batch_alter_table('monitoring_metric_values', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_monitoring_metric_values_label_id'), ['label_id'], unique=False)
        batch_op.create_index('ix_monitoring_metric_values_metric_period', ['metric_id', 'valid_from'], unique=False)
        batch_op.create_index(batch_op.f('ix_monitoring_metric_values_resource_id'), ['resource_id'], unique=False)
        batch_op.create_index('ix_monitoring_metric_values_valid_to', ['valid_to'], unique=False)

    op.create_table('monitoring_request_events',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('created', sa.DateTime(), nullable=False),
    sa.Column('received', sa.DateTime(), nullable=False),
    sa.Column('service_id', sa.Integer(), nullable=False),
    sa.Column('event_type', sa.String(length=32), nullable=True),
    sa.Column('secondary_event_type', sa.String(length=32), nullable=True),
    sa.Column('host', sa.String(length=255), nullable=False),
    sa.Column('request_path', sa.Text(), nullable=False),
    sa.Column('request_method', sa.String(length=16), nullable=False),
    sa.Column('response_status', sa.Integer(), nullable=False),
    sa.Column('response_size', sa.BigInteger(), nullable=False),
    sa.Column('response_time', sa.Float(), nullable=False),
    sa.Column('response_type', sa.String(length=255), nullable=True),
    sa.Column('user_agent', sa.String(length=255), nullable=True),
    sa.Column('user_agent_family', sa.String(length=255), nullable=True),
    sa.Column('client_ip', sa.String(length=64), nullable=True),
    sa.Column('user_identifier', sa.String(length=64), nullable=True),
    sa.Column('user_username', sa.String(length=150), nullable=True),
    sa.Column('resources', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['service_id'], ['monitoring_services.id'], name=op.f('fk_monitoring_request_events_service_id_monitoring_services'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_monitoring_request_events'))
    )
    with op.batch_alter_table('monitoring_request_events', schema=None) as batch_op:
        batch_op.create_index('ix_monitoring_request_events_service_received', ['service_id', 'received'], unique=False)

    op.create_table('monitoring_exceptions',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('created', sa.DateTime(), nullable=False),
    sa.Column('received', sa.DateTime(), nullable=False),
    sa.Column('service_id', sa.Integer(), nullable=False),
    sa.Column('error_type', sa.String(length=255), nullable=False),
    sa.Column('error_message', sa.Text(), nullable=False),
    sa.Column('error_data', sa.Text(), nullable=False),
    sa.Column('request_id', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['request_id'], ['monitoring_request_events.id'], name=op.f('fk_monitoring_exceptions_request_id_monitoring_request_events'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['service_id'], ['monitoring_services.id'], name=op.f('fk_monitoring_exceptions_service_id_monitoring_services'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_monitoring_exceptions'))
    )
    with op.batch_alter_table('monitoring_exceptions', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_monitoring_exceptions_created'), ['created'], unique=False)
        batch_op.create_index(batch_op.f('ix_monitoring_exceptions_error_type'), ['error_type'], unique=False)
        batch_op.create_index(batch_op.f('ix_monitoring_exceptions_request_id'), ['request_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('monitoring_exceptions', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_monitoring_exceptions_request_id'))
        batch_op.drop_index(batch_op.f('ix_monitoring_exceptions_error_type'))
        batch_op.drop_index(batch_op.f('ix_monitoring_exceptions_created'))

    op.drop_table('monitoring_exceptions')
    with op.batch_alter_table('monitoring_request_events', schema=None) as batch_op:
        batch_op.drop_index('ix_monitoring_request_events_service_received')

    op.drop_table('monitoring_request_events')
    with op.batch_alter_table('monitoring_metric_values', schema=None) as batch_op:
        batch_op.drop_index('ix_monitoring_metric_values_valid_to')
        batch_op.drop_index(batch_op.f('ix_monitoring_metric_values_resource_id'))
        batch_op.drop_index('ix_monitoring_metric_values_metric_period')
        batch_op.drop_index(batch_op.f('ix_monitoring_metric_values_label_id'))

    op.drop_table('monitoring_metric_values')
    with op.batch_alter_table('monitoring_metric_checks', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_monitoring_metric_checks_check_id'))

    op.drop_table('monitoring_metric_checks')
    with op.batch_alter_table('monitoring_collections', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_monitoring_collections_valid_to'))

    op.drop_table('monitoring_collections')
    op.drop_table('monitoring_services')
    with op.batch_alter_table('monitoring_notification_receivers', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_monitoring_notification_receivers_check_id'))

    op.drop_table('monitoring_notification_receivers')
    op.drop_table('monitoring_notification_definitions')
    op.drop_table('monitoring_resources')
    op.drop_table('monitoring_notification_checks')
    op.drop_table('monitoring_metrics')
    op.drop_table('monitoring_labels')
    op.drop_table('monitoring_hosts')
