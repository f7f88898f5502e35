"""cartotheca.db.models: every table, one module per family; import this to see them all."""

from cartotheca.db.models.accounts import (
    AccessToken,
    Group,
    GroupMember,
    GroupProfile,
    LoginFailure,
    OAuthApplication,
    PasswordResetToken,
    User,
    WebSession,
)
from cartotheca.db.models.admin import (
    ManagementCommandJob,
    UploadParallelismLimit,
    UploadSizeLimit,
    UploadSlot,
)
from cartotheca.db.models.changes import (
    catalogue_index_snapshots,
    resource_change_trims,
    resource_changes,
)
from cartotheca.db.models.datasets import Dataset, DatasetAttribute, Style, Upload
from cartotheca.db.models.documents import Document
from cartotheca.db.models.events import Delivery, Notice
from cartotheca.db.models.executions import ExecutionRequest
from cartotheca.db.models.harvesting import HarvestableResource, Harvester, HarvestingSession
from cartotheca.db.models.mapclient import MapClientResource
from cartotheca.db.models.maps import Map, MapLayer
from cartotheca.db.models.monitoring import (
    CollectionClaim,
    ExceptionEvent,
    MetricLabel,
    MetricNotificationCheck,
    MetricValue,
    MonitoredResource,
    MonitoredService,
    MonitoringHost,
    MonitoringMetric,
    NotificationCheck,
    NotificationMetricDefinition,
    NotificationReceiver,
    RequestEvent,
)
from cartotheca.db.models.permissions import ResourcePermission
from cartotheca.db.models.reference import (
    Category,
    Keyword,
    License,
    Region,
    RestrictionCodeType,
    SpatialRepresentationType,
    Thesaurus,
    ThesaurusKeyword,
    ThesaurusKeywordLabel,
)
from cartotheca.db.models.resource_extras import ExtraMetadata, LinkedResource, Rating
from cartotheca.db.models.resources import (
    ContactRole,
    Favorite,
    Resource,
    resource_keywords,
    resource_regions,
    resource_tkeywords,
)

__all__ = [
    "AccessToken",
    "Category",
    "CollectionClaim",
    "ContactRole",
    "Dataset",
    "DatasetAttribute",
    "Delivery",
    "Document",
    "ExceptionEvent",
    "ExecutionRequest",
    "ExtraMetadata",
    "Favorite",
    "Group",
    "GroupMember",
    "GroupProfile",
    "HarvestableResource",
    "Harvester",
    "HarvestingSession",
    "Keyword",
    "License",
    "LoginFailure",
    "LinkedResource",
    "ManagementCommandJob",
    "Map",
    "MapClientResource",
    "MapLayer",
    "MetricLabel",
    "MetricNotificationCheck",
    "MetricValue",
    "MonitoredResource",
    "MonitoredService",
    "MonitoringHost",
    "MonitoringMetric",
    "Notice",
    "NotificationCheck",
    "NotificationMetricDefinition",
    "NotificationReceiver",
    "OAuthApplication",
    "PasswordResetToken",
    "Rating",
    "Region",
    "RequestEvent",
    "Resource",
    "ResourcePermission",
    "RestrictionCodeType",
    "SpatialRepresentationType",
    "Style",
    "Thesaurus",
    "ThesaurusKeyword",
    "ThesaurusKeywordLabel",
    "Upload",
    "UploadParallelismLimit",
    "UploadSizeLimit",
    "UploadSlot",
    "User",
    "WebSession",
    "catalogue_index_snapshots",
    "resource_change_trims",
    "resource_changes",
    "resource_keywords",
    "resource_regions",
    "resource_tkeywords",
]
