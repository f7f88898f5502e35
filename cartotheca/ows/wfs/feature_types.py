"""cartotheca.ows.wfs.feature_types: the vector datasets a request names or may view, as WFS
feature types, with their fields and keywords.

Type names are advertised as ``workspace:name``; bare names resolve too.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select

from cartotheca import siteurl
from cartotheca.catalogue import permissions as perms
from cartotheca.catalogue.datasets import get_dataset, split_alternate, visible_datasets
from cartotheca.db.models import DatasetAttribute, Keyword
from cartotheca.db.models.resources import resource_keywords
from cartotheca.errors import NotFound, OWSException
from cartotheca.geodata.storage import FieldInfo
from cartotheca.ows.request import OWSRequest

GENERIC_NAMESPACE = "http://www.geonode.org/"


@dataclass
class FeatureTypeInfo:
    resource: Any
    dataset: Any
    fields: list[FieldInfo]
    keywords: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.dataset.name

    @property
    def workspace(self) -> str:
        return self.dataset.workspace

    @property
    def qname(self) -> str:
        return f"{self.workspace}:{self.name}"

    @property
    def geometry_name(self) -> str:
        return self.dataset.geometry_column or "geom"

    @property
    def epsg(self) -> int:
        return self.dataset.native_srid or 4326


def namespace_uri(req: OWSRequest, workspace: str) -> str:
    """The XML namespace of a workspace (GeoNode's own for its default workspace)."""
    if workspace == req.settings.DEFAULT_WORKSPACE:
        return GENERIC_NAMESPACE
    return f"{siteurl.base(req.settings)}/workspaces/{workspace}"


def is_vector(dataset: Any) -> bool:
    return dataset.storage != "cog"


def _fields(req: OWSRequest, resource_ids: list[int]) -> dict[int, list[FieldInfo]]:
    found: dict[int, list[FieldInfo]] = defaultdict(list)
    if resource_ids:
        rows = req.session.execute(
            select(DatasetAttribute.dataset_id, DatasetAttribute.attribute, DatasetAttribute.attribute_type)
            .where(DatasetAttribute.dataset_id.in_(resource_ids))
            .order_by(DatasetAttribute.dataset_id, DatasetAttribute.display_order, DatasetAttribute.id))
        for dataset_id, name, kind in rows:
            if (kind or "").startswith("gml:"):
                continue  # GeoNode lists the geometry among the attributes
            found[dataset_id].append(FieldInfo(name, kind or "xsd:string"))
    return found


def _keywords(req: OWSRequest, resource_ids: list[int]) -> dict[int, list[str]]:
    found: dict[int, list[str]] = defaultdict(list)
    if resource_ids:
        for resource_id, name in req.session.execute(
                select(resource_keywords.c.resource_id, Keyword.name)
                .join(Keyword, Keyword.id == resource_keywords.c.keyword_id)
                .where(resource_keywords.c.resource_id.in_(resource_ids)).order_by(Keyword.name)):
            found[resource_id].append(name)
    return found


def feature_types(req: OWSRequest, names: list[str] | None = None) -> list[FeatureTypeInfo]:
    """Vector datasets the requester may view (``names`` restricts them), with their fields:
    three statements whatever the number of datasets."""
    rows = [(r, d) for r, d in visible_datasets(req.session, req.principal, req.settings, names)
            if is_vector(d)]
    ids = [r.id for r, _ in rows]
    fields, keywords = _fields(req, ids), _keywords(req, ids)
    return [FeatureTypeInfo(r, d, fields[r.id], keywords[r.id]) for r, d in rows]


def check_found(req: OWSRequest, names: list[str], types: list[FeatureTypeInfo]) -> None:
    known = {(t.workspace, t.name) for t in types}
    for name in names:
        if split_alternate(name, req.settings) not in known:
            raise OWSException("InvalidParameterValue", f"Feature type {name} is unknown",
                               locator="typeName")


def split_names(text: str) -> list[str]:
    return [n.strip() for n in re.split(r"[,()]", text) if n.strip()]


def type_names(req: OWSRequest, version: str, required: bool = True) -> list[str]:
    if req.xml is not None:
        names = [n for el in req.xml if isinstance(el.tag, str) and el.tag.endswith("TypeName")
                 for n in split_names(el.text or "")]
        names += split_names(req.xml.get("typeName") or req.xml.get("typeNames") or "")
        return names
    text = req.get("TYPENAMES") or req.get("TYPENAME")
    if not text:
        if required:
            raise OWSException("MissingParameterValue", "Parameter TYPENAMES is required",
                               locator="typeName", version=version)
        return []
    return split_names(text)


def resolve(req: OWSRequest, name: str, codename: str = perms.DOWNLOAD) -> FeatureTypeInfo:
    """One feature type by (prefixed or bare) name, checking ``codename``."""
    try:
        resource, dataset = get_dataset(req.session, req.principal, req.settings, name, codename=codename)
    except NotFound:
        raise OWSException("InvalidParameterValue", f"Feature type {name} is unknown",
                           locator="typeName") from None
    if not is_vector(dataset):
        raise OWSException("InvalidParameterValue", f"{name} is a coverage, not a feature type",
                           locator="typeName")
    return FeatureTypeInfo(resource, dataset, _fields(req, [resource.id])[resource.id])
