"""cartotheca.api.schemas.maps: the map record's extras and the map-layer objects on the wire.

GeoNode's MapSerializer adds ``urlsuffix``, ``featuredurl`` and, in a detail, ``maplayers``:
each ``{pk, extra_params, current_style, name, order, visibility, opacity, dataset}`` with the
dataset embedded in its short form (MapLayerDatasetSerializer; its ``pk`` is a number, which
geonodectl compares with the dataset pks it was given).
"""

from __future__ import annotations

from typing import Any

from cartotheca.api.schemas.datasets import style_record
from cartotheca.catalogue import links
from cartotheca.catalogue.maps import LayerView, short_layer
from cartotheca.db.models import Map, Resource


def map_extras(resource: Resource, row: Map | None, layers: list[LayerView] | None,
               site: str) -> dict[str, Any]:
    """``layers`` None: a list record (GeoNode's list view leaves ``maplayers`` and ``data`` out)."""
    extras: dict[str, Any] = {
        "urlsuffix": row.urlsuffix if row is not None else "",
        "featuredurl": row.featuredurl if row is not None else "",
    }
    if layers is not None:
        extras["maplayers"] = [map_layer_record(v, site) for v in layers]
        # Deferred in GeoNode (include[]=data); always in a detail here, as geonodectl and the
        # MapStore client read it from there.
        extras["data"] = resource.blob if resource.blob is not None else {}
    return extras


def map_layer_record(view: LayerView, site: str) -> dict[str, Any]:
    return {**short_layer(view.layer), "dataset": layer_dataset(view, site)}


def layer_dataset(view: LayerView, site: str) -> dict[str, Any] | None:
    """The embedded dataset of a layer; None once the dataset was deleted."""
    resource, dataset = view.resource, view.dataset
    if resource is None:
        return None
    styles = sorted(dataset.styles, key=lambda s: (not s.is_default, s.id)) if dataset is not None else []
    return {
        "pk": resource.id,
        "alternate": resource.alternate,
        "title": resource.title,
        "perms": view.perms,
        "links": [link.as_dict() for link in links.resource_links(site, resource)],
        "has_time": bool(dataset.has_time) if dataset is not None else False,
        "default_style": style_record(styles[0], site) if styles else None,
        "styles": [style_record(s, site) for s in styles],
        "ptype": dataset.ptype if dataset is not None else "gxp_wmscsource",
        "featureinfo_custom_template": dataset.featureinfo_custom_template if dataset is not None
        else None,
    }


def legacy_layer_record(view: LayerView, site: str) -> dict[str, Any]:
    """The 3.x map-layer shape of ``maps/{id}/layers`` (name, opacity, visibility, layer_params)."""
    layer = view.layer
    return {
        "pk": layer.id,
        "name": layer.name,
        "store": layer.store,
        "current_style": layer.current_style,
        "opacity": layer.opacity,
        "visibility": layer.visibility,
        "order": layer.order,
        "layer_params": layer.extra_params if layer.extra_params is not None else {},
        "local": view.resource is not None,
        "ows_url": links.ows_url(site) if view.resource is not None else None,
        "dataset": view.resource.id if view.resource is not None else None,
    }


def layer_record(view: LayerView, site: str) -> dict[str, Any]:
    """A record of the ``layers`` collection: the map-layer object with its map and its link."""
    return {**map_layer_record(view, site), "map": view.layer.map_id,
            "link": f"{site}/api/v2/layers/{view.layer.id}"}
