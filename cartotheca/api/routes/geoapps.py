"""cartotheca.api.routes.geoapps: geoapps (geostories and dashboards) and the legacy geostories path.

``/api/v2/geoapps`` holds both kinds (``resource_type`` chooses at creation); ``/api/v2/geostories``
is the spec's older path to the geostories among them. Both are the resource routes with the
geoapp extras and a creation that validates the app's ``data``.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends

from cartotheca.api.deps import DbDep, SettingsDep, UserDep, read_body
from cartotheca.api.responses import JSON
from cartotheca.api.routes.resources import ResourceRoutes, bulk_items
from cartotheca.api.schemas.geoapps import geoapp_extras
from cartotheca.api.schemas.resources import RecordContext, records
from cartotheca.catalogue import geoapps
from cartotheca.catalogue import resources as catalogue
from cartotheca.catalogue.query import Listing, resource_list

BodyDep = Annotated[Any, Depends(read_body)]


class GeoappRoutes(ResourceRoutes):
    """The resource routes over geoapps; ``kind`` fixes the type of what the collection creates."""

    kind: str | None = None

    def records(self, db, listing: Listing, ctx: RecordContext, *,
                detail: bool = False) -> list[dict[str, Any]]:
        out = []
        for resource, record in zip(listing.rows, records(listing, ctx), strict=True):
            record.update(geoapp_extras(resource, detail=detail))
            out.append(record)
        return out

    def apply_patch(self, db, principal, settings, row, body, current=None) -> None:
        geoapps.patch_geoapp(db, principal, settings, row, body, current)

    def router(self) -> APIRouter:
        router = APIRouter(tags=[self.prefix])

        @router.post(f"/api/v2/{self.prefix}", status_code=201,
                     summary=f"Create one or many {self.prefix}")
        def create(db: DbDep, principal: UserDep, settings: SettingsDep, body: BodyDep) -> JSON:
            items, many = bulk_items(body, self.singular, self.plural)
            created = [geoapps.create_geoapp(db, principal, settings, item, resource_type=self.kind)
                       for item in items]
            db.commit()
            listing = resource_list.decorate(db, principal, Listing(
                catalogue.load_many(db, [r.id for r in created]), len(created), 1, None))
            ctx = self.record_context(settings, principal)
            if many:
                return JSON({self.plural: self.records(db, listing, ctx)}, status_code=201)
            return self.one(db, listing, ctx, status=201)

        router.include_router(super().router())
        return router


class GeostoryRoutes(GeoappRoutes):
    kind = "geostory"


router = APIRouter()
router.include_router(GeoappRoutes("geoapps", "geoapps", "geoapp", types=geoapps.GEOAPP_TYPES,
                                   can_create=False).router())
router.include_router(GeostoryRoutes("geostories", "geostories", "geostory", types=("geostory",),
                                     can_create=False).router())
