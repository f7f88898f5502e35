"""cartotheca.api.schemas.datasets: the dataset record on the wire (GeoNode's dataset extras).

A dataset record is the resource record plus the fields of its ``datasets`` row: name,
workspace, store, time and elevation flags, styles, and in a detail the attribute set and the
OWS URLs (GeoNode's list view leaves those four out).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from cartotheca.api.schemas.common import iso
from cartotheca.catalogue import links
from cartotheca.db.models import Dataset, DatasetAttribute, Resource, Style

DETAIL_ONLY = ("attribute_set", "ows_url", "capabilities_url", "dataset_ows_url")


def style_record(style: Style, site: str) -> dict[str, Any]:
    return {
        "pk": style.id,
        "name": style.name,
        "workspace": style.workspace,
        "sld_title": style.sld_title,
        "sld_url": sld_url(site, style),
    }


def sld_url(site: str, style: Style) -> str:
    return f"{site.rstrip('/')}/styles/{quote(style.workspace)}/{quote(style.name)}.sld"


def attribute_record(a: DatasetAttribute) -> dict[str, Any]:
    return {
        "pk": a.id,
        "attribute": a.attribute,
        "description": a.description,
        "attribute_label": a.attribute_label,
        "attribute_type": a.attribute_type,
        "visible": a.visible,
        "display_order": a.display_order,
        "featureinfo_type": a.featureinfo_type,
        "count": a.count,
        "min": a.min,
        "max": a.max,
        "average": a.average,
        "median": a.median,
        "stddev": a.stddev,
        "sum": a.sum,
        "unique_values": a.unique_values,
        "last_stats_updated": iso(a.last_stats_updated),
    }


def dataset_extras(resource: Resource, dataset: Dataset | None, site: str, *,
                   detail: bool) -> dict[str, Any]:
    """The fields a dataset adds to its resource record. A dataset resource without a
    ``datasets`` row (a remote or half-made one) gets the same keys with empty values."""
    styles = list(dataset.styles) if dataset is not None else []
    default = next((s for s in styles if s.is_default), styles[0] if styles else None)
    out: dict[str, Any] = {
        "name": dataset.name if dataset is not None else resource.name,
        "workspace": dataset.workspace if dataset is not None else None,
        "store": dataset.store if dataset is not None else None,
        "charset": dataset.charset if dataset is not None else "UTF-8",
        "is_mosaic": bool(dataset.is_mosaic) if dataset is not None else False,
        "has_time": bool(dataset.has_time) if dataset is not None else False,
        "has_elevation": bool(dataset.has_elevation) if dataset is not None else False,
        "time_regex": dataset.time_regex if dataset is not None else None,
        "elevation_regex": dataset.elevation_regex if dataset is not None else None,
        "featureinfo_custom_template": dataset.featureinfo_custom_template if dataset is not None
        else None,
        "ptype": dataset.ptype if dataset is not None else "gxp_wmscsource",
        # GeoNode 5: a table without geometry; every dataset here has a geometry or is a raster
        "is_tabular": False,
        "default_style": style_record(default, site) if default is not None else None,
        "styles": [style_record(s, site) for s in styles],
    }
    if detail:
        attributes = sorted(dataset.attributes, key=lambda a: (a.display_order, a.id)) \
            if dataset is not None else []
        out["attribute_set"] = [attribute_record(a) for a in attributes]
        has_service = dataset is not None
        remote = links.remote_ows_url(resource)  # a harvested dataset is served by its remote
        out["ows_url"] = links.ows_url(site) if has_service else remote
        out["capabilities_url"] = links.capabilities_url(site) if has_service else None
        out["dataset_ows_url"] = links.ows_url(site) if has_service else remote
    return out
