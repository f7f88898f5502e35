"""cartotheca.catalogue.map_layers: a map's layer list, checked as a whole and then written.

A new list (``maplayers`` of a map's POST/PUT/PATCH, or one layer changed through the legacy
``layers`` collection) is checked item by item first: the dataset exists and the requester may
view it, the style is one of the dataset's, opacity and order are valid. Only then are rows
changed, in the caller's one transaction, so a list failing at its third item leaves the map
exactly as it was. Items naming an existing layer by ``pk`` update it; the map's other layers
are removed, except those whose dataset the requester may not view: those are never shown to
them, and stay as they are.

After each change the map's extent is the union of its datasets' boxes (stored in Web Mercator,
like GeoNode's maps) and its internal links to its datasets follow its layers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import ColumnElement, Select, or_, select
from sqlalchemy.orm import Session, selectinload

from cartotheca.catalogue import linked_resources, resource_writer
from cartotheca.catalogue import permissions as perms
from cartotheca.catalogue.auth import Principal
from cartotheca.db.base import utcnow
from cartotheca.db.models import Dataset, MapLayer, Resource
from cartotheca.errors import InvalidInput
from cartotheca.settings import Settings

MAX_LAYERS = 1000
MAX_EXTRA_PARAMS = 65536  # bytes of one layer's extra_params once encoded
WEB_MERCATOR = "EPSG:3857"
MERCATOR_LAT = 85.0511287798066  # latitude where Web Mercator's square world ends
EARTH_RADIUS = 6378137.0
WORLD = (-180.0, -MERCATOR_LAT, 180.0, MERCATOR_LAT)
# Map-layer keys derived from the dataset (echoed back by clients, ignored)
LAYER_DERIVED = frozenset({"local", "ows_url", "styles", "map", "link"})
LAYER_KEYS = frozenset({"pk", "id", "name", "dataset", "opacity", "visibility", "order",
                        "extra_params", "layer_params", "current_style", "store"}) | LAYER_DERIVED
REDRAW = "cartotheca.maps.redraw"  # session.info key: maps whose layers changed in this session


def visible_layer_clause(principal: Principal, settings: Settings) -> ColumnElement[bool]:
    """Layers the principal may see: those of deleted datasets, and of datasets they may view."""
    viewable = select(Resource.id).where(perms.visible_to(principal, settings, check_advertised=False))
    return or_(MapLayer.dataset_id.is_(None), MapLayer.dataset_id.in_(viewable))


def visible_maps(principal: Principal, settings: Settings) -> Select:
    """The ids of the maps the principal may view (a subquery)."""
    return select(Resource.id).where(Resource.resource_type == "map",
                                     perms.visible_to(principal, settings, check_advertised=False))


@dataclass
class LayerPlan:
    """One checked item of a new layer list: the row it updates (None: a new row) and the
    values to write."""

    row: MapLayer | None
    values: dict[str, Any]


@dataclass
class _Item:
    index: int
    row: MapLayer | None
    values: dict[str, Any]
    dataset_ref: int | str | None  # pk or alternate to resolve; None keeps the row's dataset


def plan_layers(session: Session, principal: Principal, settings: Settings,
                resource: Resource | None, items: Any) -> tuple[list[LayerPlan], list[MapLayer]]:
    """Check a new layer list for ``resource`` (None: a map being created). Returns the plans
    and the layers hidden from the principal (which stay as they are); raises ``InvalidInput``
    naming the first bad item, before anything is changed."""
    if not isinstance(items, list):
        raise InvalidInput("maplayers: expected a list of map layer objects")
    if len(items) > MAX_LAYERS:
        raise InvalidInput(f"maplayers: at most {MAX_LAYERS} layers")
    visible: dict[int, MapLayer] = {}
    hidden: list[MapLayer] = []
    if resource is not None:
        # Concurrent writers of one map's layers take turns (PostgreSQL; SQLite writes are
        # serialised anyway), and each reads the list the previous one left.
        session.execute(select(Resource.id).where(Resource.id == resource.id).with_for_update())
        rows = session.scalars(select(MapLayer).where(MapLayer.map_id == resource.id)
                               .execution_options(populate_existing=True)).all()
        seen = set(session.scalars(select(MapLayer.id).where(
            MapLayer.map_id == resource.id, visible_layer_clause(principal, settings))))
        visible = {r.id: r for r in rows if r.id in seen}
        hidden = [r for r in rows if r.id not in seen]
    parsed = [_parse_item(i, item, visible, settings) for i, item in enumerate(items)]
    claimed = [p.row.id for p in parsed if p.row is not None]
    if len(claimed) != len(set(claimed)):
        raise InvalidInput("maplayers: the same layer pk appears twice")
    datasets = _resolve(session, principal, settings, [p.dataset_ref for p in parsed
                                                       if p.dataset_ref is not None])
    plans = [LayerPlan(p.row, _complete(p, datasets)) for p in parsed]
    return plans, hidden


def _parse_item(index: int, item: Any, visible: Mapping[int, MapLayer], settings: Settings) -> _Item:
    where = f"maplayers[{index}]"
    if not isinstance(item, Mapping):
        raise InvalidInput(f"{where}: expected a map layer object")
    unknown = sorted(set(item) - LAYER_KEYS)
    if unknown:
        raise InvalidInput(f"{where}: unknown field {unknown[0]}")
    row = None
    ident = item.get("pk", item.get("id"))
    if ident is not None:
        ident = int(ident) if isinstance(ident, str) and ident.isdigit() else ident
        if not isinstance(ident, int) or isinstance(ident, bool) or ident not in visible:
            raise InvalidInput(f"{where}: no layer with pk {ident!r} in this map")
        row = visible[ident]
    values: dict[str, Any] = {"order": index} if row is None else {}
    for key, check in _LAYER_VALUES.items():
        if key in item:
            values[key] = check(where, item[key])
    if "layer_params" in item and "extra_params" not in item:
        values["extra_params"] = _extra_params(where, item["layer_params"])
    name = values.get("name")
    ref = _dataset_ref(where, item.get("dataset"))
    if ref is None and name is not None and (row is None or name != row.name):
        ref = name
    if isinstance(ref, str) and ":" not in ref:
        ref = f"{settings.DEFAULT_WORKSPACE}:{ref}"  # a bare name is in the default workspace
    if ref is None and row is None:
        raise InvalidInput(f"{where}: a layer needs its dataset (pk or alternate) or its name")
    return _Item(index, row, values, ref)


def _dataset_ref(where: str, value: Any) -> int | str | None:
    if isinstance(value, Mapping):
        value = value.get("pk", value.get("id", value.get("alternate")))
    if value is None:
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        if not 0 < value < 2**63:
            raise InvalidInput(f"{where}: no dataset {value}")
        return value
    if isinstance(value, str) and value.strip() and "\x00" not in value:
        return value.strip()
    raise InvalidInput(f"{where}.dataset: expected a dataset pk or alternate")


def _resolve(session: Session, principal: Principal, settings: Settings,
             refs: Sequence[int | str]) -> dict[int | str, tuple[Resource, Dataset]]:
    """The datasets named by pk or alternate that the principal may view, in one statement."""
    ids = [r for r in refs if isinstance(r, int)]
    names = [r for r in refs if isinstance(r, str)]
    if not refs:
        return {}
    stmt = (select(Resource, Dataset).join(Dataset, Dataset.resource_id == Resource.id)
            .where(Resource.resource_type == "dataset",
                   or_(Resource.id.in_(ids), Resource.alternate.in_(names)),
                   perms.visible_to(principal, settings, check_advertised=False))
            .options(selectinload(Dataset.styles)))
    out: dict[int | str, tuple[Resource, Dataset]] = {}
    for resource, dataset in session.execute(stmt):
        out[resource.id] = out[resource.alternate] = (resource, dataset)
    return out


def _complete(item: _Item, datasets: Mapping[int | str, tuple[Resource, Dataset]]) -> dict[str, Any]:
    """The item's values with its dataset resolved and its name and style checked against it."""
    where, values = f"maplayers[{item.index}]", dict(item.values)
    if item.dataset_ref is None:
        return values
    found = datasets.get(item.dataset_ref)
    if found is None:
        # missing and not viewable read the same, so a layer cannot probe for private datasets
        raise InvalidInput(f"{where}: no dataset {item.dataset_ref!r} that you may view")
    resource, dataset = found
    names = {resource.alternate, dataset.name}
    if values.get("name") not in (None, *names):
        raise InvalidInput(f"{where}: name {values['name']!r} is not the dataset's name "
                           f"({resource.alternate})")
    values["dataset_id"] = resource.id
    values["name"] = resource.alternate
    if item.row is not None and item.row.dataset_id != resource.id and "current_style" not in values:
        values["current_style"] = None  # the old dataset's style means nothing for this one
    style = values.get("current_style")
    styles = {s.name for s in dataset.styles} | {f"{s.workspace}:{s.name}" for s in dataset.styles}
    if style and style not in styles | names:
        raise InvalidInput(f"{where}: {resource.alternate} has no style {style!r}")
    return values


def _text(where: str, key: str, value: Any, *, nullable: bool = True) -> str | None:
    if value is None and nullable:
        return None
    if not isinstance(value, str) or "\x00" in value or len(value) > 255 or not value.strip():
        raise InvalidInput(f"{where}.{key}: expected a non-empty string of at most 255 characters")
    return value.strip()


def _opacity(where: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 <= value <= 1:
        raise InvalidInput(f"{where}.opacity: expected a number from 0 to 1")
    return float(value)


def _visibility(where: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput(f"{where}.visibility: expected true or false")
    return value


def _order(where: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not -2**31 <= value < 2**31:
        raise InvalidInput(f"{where}.order: expected an integer")
    return value


def _extra_params(where: str, value: Any) -> dict[str, Any] | None:
    if isinstance(value, str):  # the legacy layer_params is JSON text
        try:
            value = orjson.loads(value) if value.strip() else None
        except orjson.JSONDecodeError:
            raise InvalidInput(f"{where}.extra_params: not valid JSON") from None
    if value is not None and not isinstance(value, dict):
        raise InvalidInput(f"{where}.extra_params: expected a JSON object")
    try:
        size = len(orjson.dumps(value))
    except TypeError:
        raise InvalidInput(f"{where}.extra_params: not valid JSON") from None
    if size > MAX_EXTRA_PARAMS:
        raise InvalidInput(f"{where}.extra_params: larger than {MAX_EXTRA_PARAMS} bytes")
    return value


_LAYER_VALUES = {
    "name": lambda where, v: _text(where, "name", v, nullable=False),
    "store": lambda where, v: _text(where, "store", v),
    "current_style": lambda where, v: _text(where, "current_style", v) if v != "" else None,
    "opacity": _opacity,
    "visibility": _visibility,
    "order": _order,
    "extra_params": _extra_params,
}


def apply_layers(session: Session, resource: Resource, plans: Sequence[LayerPlan],
                 hidden: Sequence[MapLayer]) -> list[MapLayer]:
    """Write checked plans: update or add their rows, remove the map's other visible layers,
    then recompute the extent and the internal links from the whole layer list. Returns the
    plans' rows."""
    kept = {p.row.id for p in plans if p.row is not None} | {h.id for h in hidden}
    for row in session.scalars(select(MapLayer).where(MapLayer.map_id == resource.id)).all():
        if row.id not in kept:
            session.delete(row)
    written = []
    for plan in plans:
        row = plan.row or MapLayer(map_id=resource.id, visibility=True, opacity=1.0)
        for key, value in plan.values.items():
            setattr(row, key, value)
        session.add(row)
        written.append(row)
    session.flush()
    dataset_ids = list(session.scalars(select(MapLayer.dataset_id).where(
        MapLayer.map_id == resource.id, MapLayer.dataset_id.is_not(None))))
    update_extent(session, resource, dataset_ids)
    linked_resources.set_internal_links(session, resource.id, dataset_ids)
    resource.last_updated = utcnow()
    session.info.setdefault(REDRAW, set()).add(resource.id)
    return written


def update_extent(session: Session, resource: Resource, dataset_ids: Sequence[int]) -> None:
    """The union of the datasets' lon/lat boxes, and that box in Web Mercator as the native
    one; the whole Web Mercator world for a map without located layers."""
    boxes = session.execute(select(Resource.ll_minx, Resource.ll_miny, Resource.ll_maxx,
                                   Resource.ll_maxy).where(Resource.id.in_(list(set(dataset_ids))),
                                                           Resource.ll_minx.is_not(None))).all()
    if boxes:
        minx, miny = min(b[0] for b in boxes), min(b[1] for b in boxes)
        maxx, maxy = max(b[2] for b in boxes), max(b[3] for b in boxes)
        lonlat = (max(minx, -180.0), max(miny, -MERCATOR_LAT), min(maxx, 180.0), min(maxy, MERCATOR_LAT))
    else:
        lonlat = WORLD
    x0, y0 = to_mercator(lonlat[0], lonlat[1])
    x1, y1 = to_mercator(lonlat[2], lonlat[3])
    resource_writer.set_extent(resource, (x0, y0, x1, y1), WEB_MERCATOR, lonlat)


def to_mercator(lon: float, lat: float) -> tuple[float, float]:
    lat = max(-MERCATOR_LAT, min(MERCATOR_LAT, lat))
    x = math.radians(lon) * EARTH_RADIUS
    y = math.log(math.tan(math.pi / 4 + math.radians(lat) / 2)) * EARTH_RADIUS
    return x, y


def changed_maps(session: Session) -> set[int]:
    """The maps whose layers changed since the last call (their thumbnails are redrawn after
    the commit, outside the transaction)."""
    return session.info.pop(REDRAW, set())
