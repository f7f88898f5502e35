"""cartotheca.catalogue.maps: maps and their layers: create, patch, read, the legacy ``layers``
collection, and the maps that use a dataset.

A map is a resource (type ``map``, the client's configuration in ``blob``, served as ``data``)
with a ``maps`` row and its layers; how a layer list is checked and written is in
``map_layers``. Layers whose dataset the requester may not view are left out of every answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from cartotheca.catalogue import geoapps, linked_resources, query, resource_lifecycle
from cartotheca.catalogue import permissions as perms
from cartotheca.catalogue import resources as catalogue
from cartotheca.catalogue.auth import Principal
from cartotheca.catalogue.map_layers import (
    apply_layers,
    plan_layers,
    update_extent,
    visible_layer_clause,
    visible_maps,
)
from cartotheca.catalogue.query import Field, FieldMap, ListContext, Listing
from cartotheca.db.models import Dataset, Map, MapLayer, Resource
from cartotheca.errors import InvalidInput, NotFound
from cartotheca.settings import Settings

MAP_OWN_KEYS = ("maplayers", "urlsuffix", "featuredurl", *geoapps.DATA_KEYS)
# Keys a client echoes from the create answer (or geonodectl's misspelt "ressource_type"),
# ignored as GeoNode's serializer ignores them; extra metadata is written through
# resources/{id}/extra_metadata.
IGNORED_KEYS = frozenset({"ressource_type", "linked_resources", "executions", "metadata"})


@dataclass
class LayerView:
    """A map layer as a requester sees it: the row, its dataset (None once the dataset was
    deleted) and the requester's perms on that dataset."""

    layer: MapLayer
    resource: Resource | None = None
    dataset: Dataset | None = None
    perms: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------
# reading


def map_rows(session: Session, map_ids: Sequence[int]) -> dict[int, Map]:
    if not map_ids:
        return {}
    return {m.resource_id: m for m in session.scalars(select(Map).where(Map.resource_id.in_(map_ids)))}


def layers_of_maps(session: Session, principal: Principal, settings: Settings,
                   map_ids: Sequence[int]) -> dict[int, list[LayerView]]:
    """The visible layers of each map, bottom first: four statements whatever the count."""
    if not map_ids:
        return {}
    rows = session.scalars(select(MapLayer).where(MapLayer.map_id.in_(map_ids),
                                                  visible_layer_clause(principal, settings))
                           .order_by(MapLayer.map_id, MapLayer.order, MapLayer.id)).all()
    out: dict[int, list[LayerView]] = {i: [] for i in map_ids}
    for view in layer_views(session, principal, rows):
        out[view.layer.map_id].append(view)
    return out


def layer_views(session: Session, principal: Principal, rows: Sequence[MapLayer]) -> list[LayerView]:
    """The layers with their datasets (and styles) and the principal's perms on them."""
    ids = sorted({r.dataset_id for r in rows if r.dataset_id is not None})
    found: dict[int, tuple[Resource, Dataset | None]] = {}
    if ids:
        stmt = (select(Resource, Dataset).outerjoin(Dataset, Dataset.resource_id == Resource.id)
                .where(Resource.id.in_(ids)).options(selectinload(Dataset.styles)))
        found = {resource.id: (resource, dataset) for resource, dataset in session.execute(stmt)}
    granted = perms.perms_for(session, principal, [r for r, _ in found.values()])
    views = []
    for row in rows:
        resource, dataset = found.get(row.dataset_id, (None, None)) if row.dataset_id else (None, None)
        views.append(LayerView(row, resource, dataset, granted.get(row.dataset_id, [])))
    return views


def maps_using(session: Session, principal: Principal, settings: Settings,
               dataset: Resource) -> list[Resource]:
    """The maps the principal may view with a layer showing ``dataset``, by title."""
    using = select(MapLayer.map_id).where(MapLayer.dataset_id == dataset.id)
    return list(session.scalars(
        select(Resource).where(Resource.id.in_(using), Resource.resource_type == "map",
                               perms.visible_to(principal, settings, check_advertised=False))
        .order_by(Resource.title, Resource.id)))


def layers_showing(session: Session, principal: Principal, settings: Settings,
                   dataset: Resource) -> list[MapLayer]:
    """The layers showing ``dataset`` in maps the principal may view."""
    return list(session.scalars(
        select(MapLayer).where(MapLayer.dataset_id == dataset.id,
                               MapLayer.map_id.in_(visible_maps(principal, settings)))
        .order_by(MapLayer.map_id, MapLayer.order, MapLayer.id)))


def drawn_layers(session: Session, resource: Resource, principal: Principal | None = None,
                 settings: Settings | None = None) -> list[tuple[MapLayer, Resource, Dataset]]:
    """The layers a picture of the map shows, bottom first: visible ones with a dataset (with
    its styles); with a principal, only the datasets they may view."""
    stmt = (select(MapLayer, Resource, Dataset)
            .join(Resource, Resource.id == MapLayer.dataset_id)
            .join(Dataset, Dataset.resource_id == Resource.id)
            .where(MapLayer.map_id == resource.id, MapLayer.visibility.is_(True))
            .order_by(MapLayer.order, MapLayer.id)
            .options(selectinload(Dataset.styles)))
    if principal is not None and settings is not None:
        stmt = stmt.where(perms.visible_to(principal, settings, check_advertised=False))
    return [(layer, dataset_resource, dataset) for layer, dataset_resource, dataset in session.execute(stmt)]


def short_layer(layer: MapLayer) -> dict[str, Any]:
    """GeoNode's short map-layer object (the full one adds the embedded ``dataset``)."""
    return {
        "pk": layer.id,
        "extra_params": layer.extra_params if layer.extra_params is not None else {},
        "current_style": layer.current_style,
        "name": layer.name,
        "order": layer.order,
        "visibility": layer.visibility,
        "opacity": layer.opacity,
    }


# ---------------------------------------------------------------------------------------
# writing maps


def create_map(session: Session, principal: Principal, settings: Settings,
               data: Mapping[str, Any]) -> Resource:
    """A new map from a client's field object, with its layers and its ``data`` blob."""
    if not isinstance(data, Mapping):
        raise InvalidInput("Invalid data. Expected a dictionary.")
    if data.get("resource_type", "map") != "map":
        raise InvalidInput("resource_type: this collection holds map resources only")
    own, rest = _split(data)
    rest.pop("resource_type", None)
    blob = _blob(settings, own)
    suffixes = _suffixes(own)
    # Every layer is checked before the map row exists: a bad layer leaves no map behind.
    items = own.get("maplayers", [])
    plans, _ = plan_layers(session, principal, settings, None, items)
    resource = resource_lifecycle.create_resource(session, principal, settings, rest, resource_type="map")
    resource.blob = blob if blob is not None else {}
    session.add(Map(resource_id=resource.id, urlsuffix=suffixes.get("urlsuffix", ""),
                    featuredurl=suffixes.get("featuredurl", "")))
    apply_layers(session, resource, plans, [])
    return resource


def patch_map(session: Session, principal: Principal, settings: Settings, resource: Resource,
              data: Any, current: Mapping[str, Any] | None = None) -> None:
    """PATCH/PUT of a map: its layers (replaced as a whole), ``data``, its own fields and the
    resource fields; everything is validated before the first change."""
    if not isinstance(data, Mapping):
        raise InvalidInput("Invalid data. Expected a dictionary.")
    own, rest = _split(data)
    blob = _blob(settings, own)
    suffixes = _suffixes(own)
    layer_change = None
    if "maplayers" in own and not (current is not None and own["maplayers"] == current.get("maplayers")):
        catalogue.require(session, principal, resource, perms.CHANGE)
        layer_change = plan_layers(session, principal, settings, resource, own["maplayers"])
    if blob is not None or suffixes:
        catalogue.require(session, principal, resource, perms.CHANGE)
    resource_lifecycle.patch_resource(session, principal, settings, resource, rest,
                                      dict(current or {}) or None)
    if layer_change is not None:
        plans, hidden = layer_change
        apply_layers(session, resource, plans, hidden)
    if blob is not None:
        resource.blob = blob
    if suffixes:
        row = session.get(Map, resource.id) or Map(resource_id=resource.id, urlsuffix="", featuredurl="")
        for key, value in suffixes.items():
            setattr(row, key, value)
        session.add(row)
    session.flush()


def _split(data: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    own = {k: v for k, v in data.items() if k in MAP_OWN_KEYS}
    rest = {k: v for k, v in data.items() if k not in MAP_OWN_KEYS and k not in IGNORED_KEYS}
    return own, rest


def _blob(settings: Settings, own: Mapping[str, Any]) -> dict[str, Any] | None:
    # a map's client configuration is the same kind of JSON as a geoapp's, with the same limit
    return next((geoapps.validate_data(settings, own[k], k) for k in geoapps.DATA_KEYS
                 if own.get(k) is not None), None)


def _suffixes(own: Mapping[str, Any]) -> dict[str, str]:
    out = {}
    for key in ("urlsuffix", "featuredurl"):
        if key in own:
            value = own[key] if own[key] is not None else ""
            if not isinstance(value, str) or len(value) > 255 or "\x00" in value:
                raise InvalidInput(f"{key}: expected a string of at most 255 characters")
            out[key] = value
    return out


def copy_layers(session: Session, principal: Principal, settings: Settings, source: Resource,
                clone: Resource) -> None:
    """A copied map gets copies of the source's layers the copier may see (a copy must not
    hand them a layer of someone else's private dataset), its extent and links from those."""
    rows = session.scalars(select(MapLayer).where(MapLayer.map_id == source.id,
                                                  visible_layer_clause(principal, settings))).all()
    for row in rows:
        session.add(MapLayer(map_id=clone.id, dataset_id=row.dataset_id, name=row.name,
                             store=row.store, current_style=row.current_style,
                             extra_params=row.extra_params, order=row.order,
                             visibility=row.visibility, opacity=row.opacity))
    own = session.get(Map, source.id)
    session.add(Map(resource_id=clone.id, urlsuffix="",
                    featuredurl=own.featuredurl if own is not None else ""))
    session.flush()
    dataset_ids = [r.dataset_id for r in rows if r.dataset_id is not None]
    update_extent(session, clone, dataset_ids)
    linked_resources.set_internal_links(session, clone.id, dataset_ids)


# ---------------------------------------------------------------------------------------
# the legacy ``layers`` collection: one layer at a time, written as a change of the whole list

LAYER_FIELDS = FieldMap(
    fields={
        "pk": Field(MapLayer.id, kind=int, nullable=False),
        "id": Field(MapLayer.id, kind=int, nullable=False),
        "name": Field(MapLayer.name),
        "map": Field(MapLayer.map_id, kind=int, nullable=False),
        "dataset": Field(MapLayer.dataset_id, kind=int),
        "current_style": Field(MapLayer.current_style),
        "order": Field(MapLayer.order, kind=int, nullable=False),
        "visibility": Field(MapLayer.visibility, kind=bool, nullable=False),
        "opacity": Field(MapLayer.opacity, kind=float, nullable=False),
    },
    search_fields={"name": MapLayer.name},
    default_search_fields=("name",),
    default_sort=(MapLayer.map_id, MapLayer.order),
    tiebreak=MapLayer.id,
)


def list_layers(ctx: ListContext) -> Listing:
    """A page of the layers the requester may see, in maps they may view (rows: LayerViews)."""
    principal, settings = ctx.principal, ctx.settings
    visible = [MapLayer.map_id.in_(visible_maps(principal, settings)),
               visible_layer_clause(principal, settings)]
    listing = query.page(ctx.session, select(MapLayer), ctx.query, LAYER_FIELDS, where=visible)
    listing.rows = layer_views(ctx.session, principal, listing.rows)
    return listing


def get_layer(session: Session, principal: Principal, settings: Settings, raw_id: Any) -> LayerView:
    """One layer; its map's rules answer for it (401/403/404), and a layer of a dataset the
    requester may not view is not found."""
    row = session.get(MapLayer, catalogue.parse_id(raw_id))
    if row is None:
        raise NotFound()
    catalogue.get_resource(session, principal, settings, row.map_id, resource_type=("map",), load=False)
    visible = session.scalar(select(MapLayer.id).where(MapLayer.id == row.id,
                                                       visible_layer_clause(principal, settings)))
    if visible is None:
        raise NotFound()
    return layer_views(session, principal, [row])[0]


def add_layers(session: Session, principal: Principal, settings: Settings,
               items: Sequence[Any]) -> list[int]:
    """New layers, each ``{"map": <map pk>, ...layer fields}``, on top of their maps' stacks
    unless they give an ``order``. Returns the new layers' ids."""
    by_map: dict[int, list[Mapping[str, Any]]] = {}
    for item in items:
        if not isinstance(item, Mapping):
            raise InvalidInput("Expected map layer objects")
        by_map.setdefault(_map_ref(item.get("map")), []).append(item)
    created = []
    for map_id, new in by_map.items():
        resource, rows = _writable_layers(session, principal, settings, map_id)
        top = max((r.order for r in rows), default=-1) + 1
        fresh = [{"order": top + i, **{k: v for k, v in item.items() if k not in ("map", "pk", "id")}}
                 for i, item in enumerate(new)]
        plans, hidden = plan_layers(session, principal, settings, resource,
                                    [{"pk": r.id} for r in rows] + fresh)
        written = apply_layers(session, resource, plans, hidden)
        created += [row.id for row in written[len(rows):]]
    return created


def change_layer(session: Session, principal: Principal, settings: Settings, raw_id: Any,
                 body: Any) -> int:
    """PATCH/PUT of one layer (it stays in its map)."""
    if not isinstance(body, Mapping):
        raise InvalidInput("Invalid data. Expected a dictionary.")
    layer = get_layer(session, principal, settings, raw_id).layer
    if body.get("map") is not None and _map_ref(body["map"]) != layer.map_id:
        raise InvalidInput("map: a layer cannot move to another map")
    if body.get("pk", body.get("id", layer.id)) not in (layer.id, str(layer.id)):
        raise InvalidInput("pk: does not match the layer in the URL")
    resource, rows = _writable_layers(session, principal, settings, layer.map_id)
    changed = {k: v for k, v in body.items() if k not in ("map", "id")} | {"pk": layer.id}
    items = [changed if r.id == layer.id else {"pk": r.id} for r in rows]
    plans, hidden = plan_layers(session, principal, settings, resource, items)
    apply_layers(session, resource, plans, hidden)
    return layer.id


def delete_layers(session: Session, principal: Principal, settings: Settings, ids: Sequence[Any]) -> None:
    by_map: dict[int, set[int]] = {}
    for raw in ids:
        layer = get_layer(session, principal, settings, raw).layer
        by_map.setdefault(layer.map_id, set()).add(layer.id)
    for map_id, gone in by_map.items():
        resource, rows = _writable_layers(session, principal, settings, map_id)
        plans, hidden = plan_layers(session, principal, settings, resource,
                                    [{"pk": r.id} for r in rows if r.id not in gone])
        apply_layers(session, resource, plans, hidden)


def _map_ref(value: Any) -> int:
    if isinstance(value, Mapping):
        value = value.get("pk", value.get("id"))
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidInput("map: expected the pk of a map")
    return value


def _writable_layers(session: Session, principal: Principal, settings: Settings,
                     map_id: int) -> tuple[Resource, list[MapLayer]]:
    """The map (which the principal must be allowed to change) and its layers they may see."""
    resource = catalogue.load_for_write(session, principal, settings, map_id, ("map",))
    catalogue.require(session, principal, resource, perms.CHANGE)
    rows = session.scalars(select(MapLayer).where(MapLayer.map_id == map_id,
                                                  visible_layer_clause(principal, settings))
                           .order_by(MapLayer.order, MapLayer.id)).all()
    return resource, list(rows)
