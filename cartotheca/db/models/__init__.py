"""cartotheca.db.models: every table, one module per family; import this to see them all."""

from cartotheca.db.models.accounts import (
    AccessToken,
    Group,
    GroupMember,
    GroupProfile,
    OAuthApplication,
    User,
    WebSession,
)
from cartotheca.db.models.datasets import Dataset, DatasetAttribute, Style, Upload
from cartotheca.db.models.executions import ExecutionRequest
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
    "ContactRole",
    "Dataset",
    "DatasetAttribute",
    "ExecutionRequest",
    "Favorite",
    "Group",
    "GroupMember",
    "GroupProfile",
    "Keyword",
    "License",
    "OAuthApplication",
    "Region",
    "Resource",
    "ResourcePermission",
    "RestrictionCodeType",
    "SpatialRepresentationType",
    "Style",
    "Thesaurus",
    "ThesaurusKeyword",
    "ThesaurusKeywordLabel",
    "Upload",
    "User",
    "WebSession",
    "resource_keywords",
    "resource_regions",
    "resource_tkeywords",
]
