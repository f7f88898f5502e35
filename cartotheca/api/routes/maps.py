"""cartotheca.api.routes.maps: maps, their layers, the legacy ``layers`` collection and map images.

``/api/v2/maps`` is the resource collection over maps with GeoNode's map extras; a map is created
and patched with its ``maplayers`` (checked whole, written in the request's one transaction), and
its thumbnail is redrawn after the commit. The fixed sub-paths (maplayers, layers, local_layers,
datasets) are registered before the generic ``{id}/{field_name}`` route, and this router is
included before the resources router, so they win. ``/maps/{id}/image.{png,jpg,pdf}`` draws
the map as one image for its download links.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from fastapi import APIRouter, Depends, Request
from fastapi import Path as PathParam
from starlette.responses import HTMLResponse, Response

from cartotheca import siteurl
from cartotheca.api.deps import DbDep, PrincipalDep, SettingsDep, UserDep, list_context, read_body
from cartotheca.api.responses import JSON, no_content
from cartotheca.api.routes.datasets import DatasetRoutes, _array_page
from cartotheca.api.routes.resources import RELATED_FIELDS, ResourceRoutes, bulk_items
from cartotheca.api.schemas.common import envelope
from cartotheca.api.schemas.maps import layer_record, legacy_layer_record, map_extras, map_layer_record
from cartotheca.api.schemas.resource_extras import linked_body
from cartotheca.api.schemas.resources import RecordContext, records
from cartotheca.catalogue import extra_metadata, linked_resources, map_layers, maps
from cartotheca.catalogue import resources as catalogue
from cartotheca.catalogue.datasets import DATASET_FIELDS
from cartotheca.catalogue.query import Listing, resource_list
from cartotheca.errors import InvalidInput
from cartotheca.ows import map_images
from cartotheca.ows import thumbnails as map_thumbnails
from cartotheca.settings import Settings

BodyDep = Annotated[Any, Depends(read_body)]
IdPath = Annotated[str, PathParam(description="integer id of the map")]
LayerIdPath = Annotated[str, PathParam(description="integer id of the map layer")]
LAYER_RELATED = ("dataset", "map", "extra_params")
# The template ``geonodectl maps create`` starts a map's MapStore configuration from.
MAP_TEMPLATE = {
    "version": 2,
    "map": {
        "projection": "EPSG:3857",
        "units": "m",
        "center": {"x": 0, "y": 0, "crs": "EPSG:4326"},
        "zoom": 2,
        "maxExtent": [-20037508.34, -20037508.34, 20037508.34, 20037508.34],
        "layers": [],
    },
}


@dataclass(frozen=True)
class MapContext(RecordContext):
    settings: Settings | None = None  # which datasets the requester may view depends on settings


class MapRoutes(ResourceRoutes):
    """The resource routes over maps, each record completed with its map row (and in a detail
    its visible layers and ``data``)."""

    related_fields: ClassVar[tuple[str, ...]] = RELATED_FIELDS + ("maplayers",)

    def record_context(self, settings, principal) -> MapContext:
        return MapContext(siteurl.base(settings), principal, self.prefix, settings)

    def records(self, db, listing: Listing, ctx: RecordContext, *,
                detail: bool = False) -> list[dict[str, Any]]:
        ids = [r.id for r in listing.rows]
        rows = maps.map_rows(db, ids)
        layers = maps.layers_of_maps(db, ctx.principal, ctx.settings, ids) if detail else {}
        out = []
        for resource, record in zip(listing.rows, records(listing, ctx), strict=True):
            record.update(map_extras(resource, rows.get(resource.id),
                                     layers.get(resource.id) if detail else None, ctx.site))
            out.append(record)
        return out

    def apply_patch(self, db, principal, settings, row, body, current=None) -> None:
        maps.patch_map(db, principal, settings, row, body, current)

    def after_commit(self, db, settings) -> None:
        map_thumbnails.redraw_map_thumbnails(db, settings, map_layers.changed_maps(db))

    def router(self) -> APIRouter:
        router = APIRouter(tags=[self.prefix])
        self.register_create(router)
        self.register_layer_lists(router)
        router.include_router(super().router())
        return router

    def register_create(self, router: APIRouter) -> None:
        @router.post(f"/api/v2/{self.prefix}", status_code=201, summary="Create one or many maps")
        def create(db: DbDep, principal: UserDep, settings: SettingsDep, body: BodyDep) -> JSON:
            items, many = bulk_items(body, self.singular, self.plural)
            created = [maps.create_map(db, principal, settings, item) for item in items]
            db.commit()
            self.after_commit(db, settings)
            listing = resource_list.decorate(db, principal, Listing(
                catalogue.load_many(db, [r.id for r in created]), len(created), 1, None))
            ctx = self.record_context(settings, principal)
            found = self.records(db, listing, ctx, detail=True)
            if many:
                return JSON({self.plural: found}, status_code=201)
            # GeoNode's create answer also carries the deferred linked_resources, executions
            # (none yet: the map was made synchronously) and extra metadata
            resource = listing.rows[0]
            linked = linked_resources.linked(db, principal, settings, resource, {})
            record = {**found[0], "linked_resources": linked_body(linked, ctx.site), "executions": [],
                      "metadata": extra_metadata.list_items(db, resource, [])}
            return JSON({self.singular: record}, status_code=201)

    def register_layer_lists(self, router: APIRouter) -> None:
        base = f"/api/v2/{self.prefix}/{{map_id}}"

        def views(db, principal, settings, map_id: str) -> list[maps.LayerView]:
            resource = catalogue.get_resource(db, principal, settings, map_id,
                                              resource_type=self.types, load=False).rows[0]
            return maps.layers_of_maps(db, principal, settings, [resource.id])[resource.id]

        @router.get(f"{base}/maplayers", summary="Every layer of the map (bare array)")
        def maplayers(request: Request, map_id: IdPath, db: DbDep, principal: PrincipalDep,
                      settings: SettingsDep) -> JSON:
            found = views(db, principal, settings, map_id)
            items = [map_layer_record(v, siteurl.base(settings)) for v in found]
            return JSON(_array_page(request, items, ("name",), settings))

        @router.get(f"{base}/local_layers", summary="The map's layers of local datasets")
        def local_layers(request: Request, map_id: IdPath, db: DbDep, principal: PrincipalDep,
                         settings: SettingsDep) -> JSON:
            found = [v for v in views(db, principal, settings, map_id) if v.resource is not None]
            items = [map_layer_record(v, siteurl.base(settings)) for v in found]
            return JSON(_array_page(request, items, ("name",), settings))

        @router.get(f"{base}/layers", summary="The map's layers: name, opacity, visibility, layer_params")
        def layers(request: Request, map_id: IdPath, db: DbDep, principal: PrincipalDep,
                   settings: SettingsDep) -> JSON:
            found = views(db, principal, settings, map_id)
            items = [legacy_layer_record(v, siteurl.base(settings)) for v in found]
            return JSON(_array_page(request, items, ("name",), settings))

        @router.get(f"{base}/datasets", summary="The datasets the map shows (bare array)")
        def datasets(request: Request, map_id: IdPath, db: DbDep, principal: PrincipalDep,
                     settings: SettingsDep) -> JSON:
            found = views(db, principal, settings, map_id)
            ids = list(dict.fromkeys(v.resource.id for v in found if v.resource is not None))
            rows = catalogue.load_many(db, ids)
            listing = resource_list.decorate(db, principal, Listing(rows, len(ids), 1, None))
            items = DATASETS.records(db, listing, DATASETS.record_context(settings, principal))
            return JSON(_array_page(request, items, ("title", "name"), settings))


DATASETS = DatasetRoutes("datasets", "datasets", "dataset", types=("dataset",), fields=DATASET_FIELDS)
COLLECTION = MapRoutes("maps", "maps", "map", types=("map",), can_create=False)
router = APIRouter()
router.include_router(COLLECTION.router())


# -- the legacy ``layers`` collection ------------------------------------------------------

def _layers_answer(db, principal, settings, ids: list[int], *, key: str, many: bool,
                   status: int = 200) -> JSON:
    found = {v.layer.id: v for v in maps.layer_views(db, principal, [
        maps.get_layer(db, principal, settings, i).layer for i in ids])}
    items = [layer_record(found[i], siteurl.base(settings)) for i in ids]
    return JSON({key: items} if many else {key: items[0]}, status_code=status)


@router.get("/api/v2/layers", tags=["layers"], summary="Map layers of the maps the requester may view")
def list_layers(request: Request, db: DbDep, principal: PrincipalDep, settings: SettingsDep) -> JSON:
    listing = maps.list_layers(list_context(request, db, principal))
    items = [layer_record(v, siteurl.base(settings)) for v in listing.rows]
    return JSON(envelope(request, "layers", items, total=listing.total, page=listing.page,
                         page_size=listing.page_size))


@router.post("/api/v2/layers", status_code=201, tags=["layers"],
             summary="Add layers to maps ({\"map\": <pk>, name or dataset, ...})")
def create_layers(db: DbDep, principal: UserDep, settings: SettingsDep, body: BodyDep) -> JSON:
    items, many = bulk_items(body, "layer", "layers")
    ids = maps.add_layers(db, principal, settings, items)
    db.commit()
    map_thumbnails.redraw_map_thumbnails(db, settings, map_layers.changed_maps(db))
    return _layers_answer(db, principal, settings, ids, key="layers" if many else "layer", many=many,
                          status=201)


@router.patch("/api/v2/layers", tags=["layers"], summary="Change several layers ([{id, ...}])")
def patch_layers(db: DbDep, principal: UserDep, settings: SettingsDep, body: BodyDep) -> JSON:
    items, _ = bulk_items(body, "layer", "layers")
    ids = catalogue.bulk_ids(items, "layers")
    for ident, item in zip(ids, items, strict=True):
        maps.change_layer(db, principal, settings, ident, item)
    db.commit()
    map_thumbnails.redraw_map_thumbnails(db, settings, map_layers.changed_maps(db))
    return _layers_answer(db, principal, settings, ids, key="layers", many=True)


@router.delete("/api/v2/layers", status_code=204, tags=["layers"], summary="Remove several layers")
def delete_many_layers(db: DbDep, principal: UserDep, settings: SettingsDep, body: BodyDep):
    maps.delete_layers(db, principal, settings, catalogue.bulk_ids(body, "layers"))
    db.commit()
    map_thumbnails.redraw_map_thumbnails(db, settings, map_layers.changed_maps(db))
    return no_content()


@router.get("/api/v2/layers/{layer_id}", tags=["layers"], summary="One map layer")
def layer_detail(layer_id: LayerIdPath, db: DbDep, principal: PrincipalDep, settings: SettingsDep) -> JSON:
    view = maps.get_layer(db, principal, settings, layer_id)
    return JSON({"layer": layer_record(view, siteurl.base(settings))})


def _change(layer_id: str, db, principal, settings, body) -> JSON:
    if isinstance(body, dict) and set(body) == {"layer"} and isinstance(body["layer"], dict):
        body = body["layer"]
    ident = maps.change_layer(db, principal, settings, layer_id, body)
    db.commit()
    map_thumbnails.redraw_map_thumbnails(db, settings, map_layers.changed_maps(db))
    return _layers_answer(db, principal, settings, [ident], key="layer", many=False)


@router.put("/api/v2/layers/{layer_id}", tags=["layers"], summary="Update a map layer")
def put_layer(layer_id: LayerIdPath, db: DbDep, principal: UserDep, settings: SettingsDep,
              body: BodyDep) -> JSON:
    return _change(layer_id, db, principal, settings, body)


@router.patch("/api/v2/layers/{layer_id}", tags=["layers"], summary="Partially update a map layer")
def patch_layer(layer_id: LayerIdPath, db: DbDep, principal: UserDep, settings: SettingsDep,
                body: BodyDep) -> JSON:
    return _change(layer_id, db, principal, settings, body)


@router.delete("/api/v2/layers/{layer_id}", status_code=204, tags=["layers"], summary="Remove a map layer")
def delete_layer(layer_id: LayerIdPath, db: DbDep, principal: UserDep, settings: SettingsDep):
    maps.delete_layers(db, principal, settings, [layer_id])
    db.commit()
    map_thumbnails.redraw_map_thumbnails(db, settings, map_layers.changed_maps(db))
    return no_content()


@router.get("/api/v2/layers/{layer_id}/{field_name}", tags=["layers"], summary="Related objects of one field")
def layer_related(layer_id: LayerIdPath, field_name: str, db: DbDep, principal: PrincipalDep,
                  settings: SettingsDep) -> JSON:
    if field_name not in LAYER_RELATED:
        raise InvalidInput(f"Invalid field name: {field_name}")
    record = layer_record(maps.get_layer(db, principal, settings, layer_id), siteurl.base(settings))
    return JSON({field_name: record[field_name]})


# -- map images and pages --------------------------------------------------------------------

@router.get("/maps/{map_id}/image.{extension}", tags=["maps"],
            summary="The map drawn as one image (png, jpg or pdf) over its extent")
def map_image(map_id: IdPath, extension: str, db: DbDep, principal: PrincipalDep,
              settings: SettingsDep) -> Response:
    resource = catalogue.get_resource(db, principal, settings, map_id, resource_type=("map",),
                                      load=False).rows[0]
    data, mime = map_images.render_map(db, principal, settings, resource, extension)
    filename = f"map-{resource.id}.{extension.lower()}"
    return Response(data, media_type=mime, headers={
        "Content-Disposition": f'inline; filename="{filename}"',
        "Cache-Control": "private, max-age=0"})


@router.get("/maps/{map_id}/embed", include_in_schema=False)
def map_embed(map_id: IdPath, db: DbDep, principal: PrincipalDep, settings: SettingsDep) -> HTMLResponse:
    """GeoNode's ``embed_url`` of a map: a page showing the map's image."""
    resource = catalogue.get_resource(db, principal, settings, map_id, resource_type=("map",),
                                      load=False).rows[0]
    title = html.escape(resource.title or "", quote=True)
    image = html.escape(f"{siteurl.url(settings)}maps/{resource.id}/image.png", quote=True)
    return HTMLResponse(f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{title}</title>"
                        "<style>body{margin:0}img{max-width:100%;height:auto;display:block}</style>"
                        f"</head><body><img src=\"{image}\" alt=\"{title}\"></body></html>")


@router.get("/static/mapstore/configs/map.json", include_in_schema=False)
def map_template() -> JSON:
    return JSON(MAP_TEMPLATE)
