"""cartotheca.catalogue.datasets: finding datasets by name, and the dataset records of the API.

Every OWS request and download resolves its layer names here, so the same permission rules
apply as in the API: ``view`` to see and render, ``download`` to get features and coverages.
The dataset API loads a page's dataset rows here and validates changes to a dataset's own
fields (featureinfo template, attribute labels) before any of them is applied.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session, selectinload

from cartotheca import siteurl
from cartotheca.catalogue import maps, resource_lifecycle
from cartotheca.catalogue import permissions as perms
from cartotheca.catalogue import resources as catalogue
from cartotheca.catalogue.auth import Principal
from cartotheca.catalogue.query import Field, FieldMap
from cartotheca.catalogue.query.resource_list import RESOURCE_FIELDS
from cartotheca.db.base import utcnow
from cartotheca.db.models import Dataset, DatasetAttribute, Resource, Style
from cartotheca.errors import InvalidInput, NotFound, PermissionDenied
from cartotheca.settings import Settings


def split_alternate(name: str, settings: Settings) -> tuple[str, str]:
    """``workspace:name`` → (workspace, name); a bare name takes the default workspace.
    A name with a NUL character names no dataset (and PostgreSQL could not compare it)."""
    if "\x00" in name:
        raise NotFound(f"No dataset named {name}")
    workspace, sep, layer = name.strip().partition(":")
    if not sep:
        return settings.DEFAULT_WORKSPACE, workspace
    return workspace, layer


def visible_datasets(session: Session, principal: Principal, settings: Settings,
                     names: list[str] | None = None) -> list[tuple[Resource, Dataset]]:
    """Datasets the principal may view (published, approved as the catalogue rules say),
    ordered by title; ``names`` (alternates or bare names) restricts the set."""
    stmt = (
        select(Resource, Dataset)
        .join(Dataset, Dataset.resource_id == Resource.id)
        .where(perms.visible_to(principal, settings, check_advertised=False))
        .where(Resource.resource_type == "dataset")
        .order_by(Resource.title, Resource.id)
    )
    if names is not None:
        pairs = [split_alternate(n, settings) for n in names]
        if not pairs:
            return []
        stmt = stmt.where(Dataset.name.in_({layer for _, layer in pairs}))
        rows = [(r, d) for r, d in session.execute(stmt).all() if (d.workspace, d.name) in set(pairs)]
        return rows
    return [(r, d) for r, d in session.execute(stmt).all()]


def get_dataset(session: Session, principal: Principal, settings: Settings, name: str,
                codename: str = perms.VIEW) -> tuple[Resource, Dataset]:
    """The dataset called ``name`` if the principal may view it, else ``NotFound``;
    ``PermissionDenied`` when visible but ``codename`` (e.g. download) is not held."""
    workspace, layer = split_alternate(name, settings)
    row = session.execute(
        select(Resource, Dataset)
        .join(Dataset, Dataset.resource_id == Resource.id)
        .where(Dataset.workspace == workspace, Dataset.name == layer)
        .where(perms.visible_to(principal, settings, check_advertised=False))
    ).first()
    if row is None:
        raise NotFound(f"No dataset named {name}")
    resource, dataset = row
    if codename != perms.VIEW and not perms.can(session, principal, resource, codename):
        raise PermissionDenied(f"You do not have permission to {codename.split('_')[0]} {name}")
    return resource, dataset


_LOOKUPS: OrderedDict[tuple, Any] = OrderedDict()
_LOOKUPS_LOCK = threading.Lock()


def _lookup_statement(principal: Principal, settings: Settings) -> Any:
    """The dataset-by-name query with the principal's view rules, built once per kind of
    principal (its user, groups and the moderation settings are all the rules depend on) with
    the workspace and name as bound parameters: building the permission clauses costs more
    than running the query. Each row carries the dataset's default style's SLD (the style
    ``dataset_sld`` would pick), which saves a second query per map."""
    key = (principal.id, principal.is_superuser, principal.group_ids, principal.member_group_ids,
           bool(settings.RESOURCE_PUBLISHING), bool(settings.ADMIN_MODERATE_UPLOADS))
    with _LOOKUPS_LOCK:
        stmt = _LOOKUPS.get(key)
        if stmt is not None:
            _LOOKUPS.move_to_end(key)
            return stmt
    style = (select(Style.sld_body).where(Style.dataset_id == Dataset.resource_id)
             .order_by(Style.is_default.desc(), Style.id).limit(1).correlate(Dataset).scalar_subquery())
    stmt = (select(Resource, Dataset, style)
            .join(Dataset, Dataset.resource_id == Resource.id)
            .where(Dataset.workspace == bindparam("workspace"), Dataset.name == bindparam("name"))
            .where(perms.visible_to(principal, settings, check_advertised=False)))
    with _LOOKUPS_LOCK:
        _LOOKUPS[key] = stmt
        while len(_LOOKUPS) > 256:
            _LOOKUPS.popitem(last=False)
    return stmt


def get_dataset_to_draw(session: Session, principal: Principal, settings: Settings,
                        name: str) -> tuple[Resource, Dataset, str | None]:
    """What ``get_dataset`` answers for viewing, plus the SLD of the dataset's default style
    (or None), in one prepared query: the map server's lookup for every map and tile."""
    workspace, layer = split_alternate(name, settings)
    row = session.execute(_lookup_statement(principal, settings),
                          {"workspace": workspace, "name": layer}).first()
    if row is None:
        raise NotFound(f"No dataset named {name}")
    return row[0], row[1], row[2]


def get_dataset_by_id(session: Session, principal: Principal, settings: Settings, resource_id: int,
                      codename: str = perms.VIEW) -> tuple[Resource, Dataset]:
    row = session.execute(
        select(Resource, Dataset)
        .join(Dataset, Dataset.resource_id == Resource.id)
        .where(Resource.id == resource_id)
        .where(perms.visible_to(principal, settings, check_advertised=False))
    ).first()
    if row is None:
        raise NotFound()
    resource, dataset = row
    if codename != perms.VIEW and not perms.can(session, principal, resource, codename):
        raise PermissionDenied()
    return resource, dataset


# ---------------------------------------------------------------------------------------
# dataset records: the rows behind the dataset API's extra fields


def load_datasets(session: Session, resource_ids: Sequence[int], *,
                  attributes: bool = False) -> dict[int, Dataset]:
    """The dataset rows of a page with their styles (and attributes for a detail): one
    statement for the rows and one per relation, whatever the page size."""
    if not resource_ids:
        return {}
    options = [selectinload(Dataset.styles)]
    if attributes:
        options.append(selectinload(Dataset.attributes))
    rows = session.scalars(select(Dataset).where(Dataset.resource_id.in_(list(resource_ids)))
                           .options(*options))
    return {row.resource_id: row for row in rows}


def _dataset_field(column, kind: type = str) -> Field:
    return Field(column, kind=kind,
                 via=lambda cond: Resource.id.in_(select(Dataset.resource_id).where(cond)),
                 sort=select(column).where(Dataset.resource_id == Resource.id)
                 .correlate(Resource).scalar_subquery())


def _dataset_fields() -> FieldMap:
    fields = dict(RESOURCE_FIELDS.fields)
    for name in ("workspace", "store", "charset", "ptype", "time_regex", "elevation_regex"):
        fields[name] = _dataset_field(getattr(Dataset, name))
    for name in ("has_time", "has_elevation", "is_mosaic"):
        fields[name] = _dataset_field(getattr(Dataset, name), bool)
    return replace(RESOURCE_FIELDS, fields=fields)


# What ``/api/v2/datasets`` filters and sorts on: the resource fields plus the dataset row's.
DATASET_FIELDS = _dataset_fields()

# GeoNode's attribute featureinfo types (how GetFeatureInfo templates show a value)
FEATUREINFO_TYPES = (
    "type_property", "type_href", "type_image", "type_video_mp4", "type_video_ogg",
    "type_video_webm", "type_video_3gp", "type_video_flv", "type_video_youtube", "type_audio",
    "type_iframe",
)
# Keys of a dataset record a client may change; the rest are derived from the data.
ATTRIBUTE_WRITABLE = ("attribute_label", "description", "visible", "display_order", "featureinfo_type")
DATASET_READ_ONLY = frozenset({
    "name", "workspace", "store", "charset", "is_mosaic", "has_time", "has_elevation",
    "time_regex", "elevation_regex", "ptype", "default_style", "styles", "ows_url",
    "capabilities_url", "dataset_ows_url", "is_tabular",
})
MAX_TEMPLATE_LENGTH = 65536


def patch_dataset(session: Session, principal: Principal, settings: Settings, resource: Resource,
                  dataset: Dataset | None, data: Mapping[str, Any],
                  current: Mapping[str, Any] | None = None) -> Resource:
    """PATCH/PUT of a dataset record: the dataset's own keys (featureinfo template, attribute
    labels, visibility and order) and the resource fields, validated before anything changes.

    ``current`` is the record as the client last read it: read-only keys echoed back unchanged
    are accepted, as clients PUT back what they GET.
    """
    if not isinstance(data, Mapping):
        raise InvalidInput("Invalid data. Expected a dictionary.")
    catalogue.require(session, principal, resource, perms.CHANGE_METADATA)
    current = current or {}
    own = {k: v for k, v in data.items() if k in DATASET_READ_ONLY or k in _DATASET_WRITABLE}
    rest = {k: v for k, v in data.items() if k not in own}
    for key in own:
        if key in DATASET_READ_ONLY and current.get(key) != own[key]:
            raise InvalidInput(f"{key}: this field is read-only and cannot be changed")
    template = _template(own["featureinfo_custom_template"]) \
        if "featureinfo_custom_template" in own else ...
    changes = []
    for key in ("attribute_set", "attribute"):
        if key in own:
            if dataset is None:
                raise InvalidInput(f"{key}: this dataset has no attributes")
            changes += attribute_changes(dataset, own[key], key)
    resource_lifecycle.patch_resource(session, principal, settings, resource, rest, dict(current) or None)
    if template is not ... and dataset is not None:
        dataset.featureinfo_custom_template = template
    for attribute, values in changes:
        for name, value in values.items():
            setattr(attribute, name, value)
    if own:
        resource.last_updated = utcnow()
    session.flush()
    return resource


_DATASET_WRITABLE = frozenset({"featureinfo_custom_template", "attribute_set", "attribute"})


def _template(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or "\x00" in value:
        raise InvalidInput("featureinfo_custom_template: expected an HTML string or null")
    if len(value) > MAX_TEMPLATE_LENGTH:
        raise InvalidInput(f"featureinfo_custom_template: at most {MAX_TEMPLATE_LENGTH} characters")
    return value


def attribute_changes(dataset: Dataset, items: Any, key: str = "attribute_set"
                      ) -> list[tuple[DatasetAttribute, dict[str, Any]]]:
    """Validate a list of attribute objects (by ``pk``, or by ``attribute`` name) into the
    changes to make; nothing is changed here, so a bad item leaves every attribute as it was.
    Statistics and types are computed from the data: sent back unchanged they are ignored,
    changed they are refused."""
    if not isinstance(items, list):
        raise InvalidInput(f"{key}: expected a list of attribute objects")
    by_id = {a.id: a for a in dataset.attributes}
    by_name = {a.attribute: a for a in dataset.attributes}
    out = []
    for item in items:
        if not isinstance(item, Mapping):
            raise InvalidInput(f"{key}: expected a list of attribute objects")
        attribute = _find_attribute(item, by_id, by_name, key)
        values: dict[str, Any] = {}
        for name, value in item.items():
            if name in ("pk", "id"):
                continue
            if name in ATTRIBUTE_WRITABLE:
                values[name] = _attribute_value(name, value, key)
            elif name in _ATTRIBUTE_DERIVED:
                if value != _ATTRIBUTE_DERIVED[name](attribute):
                    raise InvalidInput(f"{key}: {name} of {attribute.attribute} is read-only")
            else:
                raise InvalidInput(f"{key}: unknown attribute field {name}")
        out.append((attribute, values))
    return out


def _find_attribute(item: Mapping[str, Any], by_id: dict[int, DatasetAttribute],
                    by_name: dict[str, DatasetAttribute], key: str) -> DatasetAttribute:
    ident = item.get("pk", item.get("id"))
    if isinstance(ident, str) and ident.isdigit():
        ident = int(ident)
    if ident is not None:
        if not isinstance(ident, int) or isinstance(ident, bool) or ident not in by_id:
            raise InvalidInput(f"{key}: no attribute with pk {ident!r} in this dataset")
        return by_id[ident]
    name = item.get("attribute")
    if isinstance(name, str) and name in by_name:
        return by_name[name]
    raise InvalidInput(f"{key}: each item needs the pk (or attribute name) of one of the "
                       "dataset's attributes")


def _attribute_value(name: str, value: Any, key: str) -> Any:
    if name in ("attribute_label", "description"):
        if value is not None and (not isinstance(value, str) or "\x00" in value):
            raise InvalidInput(f"{key}: {name} must be a string or null")
        if name == "attribute_label" and value is not None and len(value) > 255:
            raise InvalidInput(f"{key}: attribute_label has at most 255 characters")
        return value
    if name == "visible":
        if not isinstance(value, bool):
            raise InvalidInput(f"{key}: visible must be a boolean")
        return value
    if name == "display_order":
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 2**31 - 1:
            raise InvalidInput(f"{key}: display_order must be a non-negative integer")
        return value
    if value not in FEATUREINFO_TYPES:
        raise InvalidInput(f"{key}: featureinfo_type must be one of {', '.join(FEATUREINFO_TYPES)}")
    return value


def _iso(value) -> str | None:
    return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ") if value is not None else None


_ATTRIBUTE_DERIVED = {
    "attribute": lambda a: a.attribute,
    "attribute_type": lambda a: a.attribute_type,
    "count": lambda a: a.count,
    "min": lambda a: a.min,
    "max": lambda a: a.max,
    "average": lambda a: a.average,
    "median": lambda a: a.median,
    "stddev": lambda a: a.stddev,
    "sum": lambda a: a.sum,
    "unique_values": lambda a: a.unique_values,
    "last_stats_updated": lambda a: _iso(a.last_stats_updated),
}


# ---------------------------------------------------------------------------------------
# maps that use a dataset


def map_layers_of(session: Session, principal: Principal, settings: Settings,
                  resource: Resource) -> list[dict[str, Any]]:
    """The map layers that show ``resource`` in maps the principal may view, as GeoNode's short
    map-layer objects (``pk``, ``extra_params``, ``current_style``, ``name``, ``order``,
    ``visibility``, ``opacity``)."""
    return [maps.short_layer(layer) for layer in maps.layers_showing(session, principal, settings, resource)]


def maps_of(session: Session, principal: Principal, settings: Settings,
            resource: Resource) -> list[dict[str, Any]]:
    """The maps the principal may view that use ``resource``, as ``{pk, title, detail_url,
    link}`` objects (GeoNode's SimpleMapSerializer: the pk is a number here)."""
    site = siteurl.base(settings)
    return [{"pk": m.id, "title": m.title, "detail_url": f"{site}/catalogue/#/map/{m.id}",
             "link": f"{site}/api/v2/maps/{m.id}"}
            for m in maps.maps_using(session, principal, settings, resource)]
