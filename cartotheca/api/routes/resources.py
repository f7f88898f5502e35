"""cartotheca.api.routes.resources: the resource collections (all types, and typed ones).

``ResourceRoutes`` registers the same endpoints for ``resources`` and for every typed
collection (datasets, documents, maps, geoapps ...), so listing, the query language,
favourites and bulk semantics work for every type through one code path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar

from fastapi import APIRouter, Depends, Path, Query, Request
from sqlalchemy import update

from cartotheca import siteurl
from cartotheca.api.deps import (
    DbDep,
    KindsDep,
    PrincipalDep,
    ReadDbDep,
    SettingsDep,
    UserDep,
    list_context,
    list_query_params,
    read_body,
)
from cartotheca.api.responses import JSON, no_content
from cartotheca.api.schemas.common import envelope
from cartotheca.api.schemas.permissions import resource_types_body
from cartotheca.api.schemas.resources import RecordContext, records, select_fields
from cartotheca.catalogue import resource_lifecycle
from cartotheca.catalogue import resources as catalogue
from cartotheca.catalogue.query import FieldMap, FilterTerm, Listing, resource_list
from cartotheca.catalogue.query.resource_list import RESOURCE_FIELDS
from cartotheca.db.base import utcnow
from cartotheca.db.models import Resource
from cartotheca.errors import InvalidInput, MethodNotAllowed, PermissionDenied

BodyDep = Annotated[Any, Depends(read_body)]
IdPath = Annotated[str, Path(description="integer id of the resource")]

RELATED_FIELDS = (
    "owner", "keywords", "tkeywords", "regions", "category", "license", "group",
    "restriction_code_type", "spatial_representation_type", "poc", "metadata_author",
    "processor", "publisher", "custodian", "distributor", "resource_user", "resource_provider",
    "originator", "principal_investigator", "links", "perms", "extent",
)


@dataclass
class ListParams:
    """The documented query parameters of a list (``filter{...}`` keys are read directly)."""

    include: list[str]
    exclude: list[str]
    api_preset: str | None


async def list_params(
    _common: Annotated[None, Depends(list_query_params)],
    extent: Annotated[str | None, Query(description="minx,miny,maxx,maxy in lon/lat")] = None,
    favorite: Annotated[str | None, Query(description="true: only the requester's favourites")] = None,
    include: Annotated[list[str] | None, Query(alias="include[]")] = None,
    exclude: Annotated[list[str] | None, Query(alias="exclude[]")] = None,
    api_preset: Annotated[str | None, Query()] = None,
) -> ListParams:
    # async: resolved on the event loop, with no trip to the thread pool of its own
    return ListParams(include or [], exclude or [], api_preset)


ListParamsDep = Annotated[ListParams, Depends(list_params)]


@dataclass
class ResourceRoutes:
    prefix: str  # "resources", "datasets", ...
    plural: str
    singular: str
    types: Sequence[str] | None = None  # None: every type
    can_create: bool = True
    can_delete: bool = True
    fields: FieldMap = field(default_factory=lambda: RESOURCE_FIELDS, repr=False)
    related_fields: ClassVar[tuple[str, ...]] = RELATED_FIELDS

    def router(self) -> APIRouter:
        router = APIRouter(prefix=f"/api/v2/{self.prefix}", tags=[self.prefix])
        self.register_lists(router)
        self.register_collection_writes(router)
        self.register_item(router)
        return router

    # -- helpers ------------------------------------------------------------------------

    def base(self) -> list:
        return [Resource.resource_type.in_(self.types)] if self.types else []

    def base_terms(self) -> list[FilterTerm]:
        """``base`` in the query language, for the catalogue index's exact totals."""
        if not self.types:
            return []
        return [FilterTerm("resource_type", "resource_type", "in", False, tuple(self.types))]

    def records(self, db, listing: Listing, ctx: RecordContext, *,
                detail: bool = False) -> list[dict[str, Any]]:
        """The wire records of ``listing``; typed collections add their extra fields here."""
        return records(listing, ctx)

    def apply_patch(self, db, principal, settings, row: Resource, body: Any,
                    current: dict[str, Any] | None = None) -> None:
        """Validate and apply a client's field object to one record of this collection."""
        resource_lifecycle.patch_resource(db, principal, settings, row, body, current)

    def after_commit(self, db, settings) -> None:
        """Work a typed collection does once a patch is committed (maps redraw thumbnails)."""

    def serialise(self, db, listing: Listing, ctx: RecordContext,
                  params: ListParams | None = None) -> list[dict[str, Any]]:
        items = self.records(db, listing, ctx)
        if params is not None:
            items = [select_fields(i, params.include, params.exclude, params.api_preset) for i in items]
        return items

    def page(self, request: Request, db, listing: Listing, ctx: RecordContext,
             params: ListParams, key: str | None = None) -> JSON:
        items = self.serialise(db, listing, ctx, params)
        return JSON(envelope(request, key or self.plural, items, total=listing.total,
                             page=listing.page, page_size=listing.page_size, has_next=listing.has_next))

    def record_context(self, settings, principal) -> RecordContext:
        return RecordContext(siteurl.base(settings), principal, self.prefix)

    def one(self, db, listing: Listing, ctx: RecordContext, status: int = 200) -> JSON:
        return JSON({self.singular: self.records(db, listing, ctx, detail=True)[0]}, status_code=status)

    # -- lists --------------------------------------------------------------------------

    def register_lists(self, router: APIRouter) -> None:
        @router.get("", summary=f"List {self.prefix}")
        def list_items(request: Request, db: ReadDbDep, principal: PrincipalDep,
                       settings: SettingsDep, params: ListParamsDep) -> JSON:
            ctx = list_context(request, db, principal)
            listing = resource_list.list_resources(ctx, base=self.base(), fields=self.fields,
                                                   base_terms=self.base_terms())
            return self.page(request, db, listing, self.record_context(settings, principal), params)

        if self.prefix != "resources":
            return

        def flagged(flag):
            term = FilterTerm(flag.key, flag.key, "eq", False, ("true",))

            def view(request: Request, db: ReadDbDep, principal: PrincipalDep,
                     settings: SettingsDep, params: ListParamsDep) -> JSON:
                ctx = list_context(request, db, principal)
                listing = resource_list.list_resources(ctx, base=[flag.is_(True)], base_terms=[term])
                return self.page(request, db, listing, self.record_context(settings, principal), params)
            return view

        router.get("/approved", summary="Approved resources")(flagged(Resource.is_approved))
        router.get("/featured", summary="Featured resources")(flagged(Resource.featured))
        router.get("/published", summary="Published resources")(flagged(Resource.is_published))

        @router.get("/favorites", summary="The requester's favourite resources")
        def favorites(request: Request, db: ReadDbDep, principal: UserDep,
                      settings: SettingsDep, params: ListParamsDep) -> JSON:
            ctx = list_context(request, db, principal)
            ctx.params["favorite"] = ["true"]
            listing = resource_list.list_resources(ctx)
            return self.page(request, db, listing, self.record_context(settings, principal), params,
                             key="favorites")

        @router.get("/resource_types", summary="Resource types with visible counts")
        def resource_types(db: ReadDbDep, principal: PrincipalDep, settings: SettingsDep) -> JSON:
            counts = catalogue.type_counts(db, principal, settings)
            return JSON(resource_types_body(counts))

    # -- collection writes --------------------------------------------------------------

    def register_collection_writes(self, router: APIRouter) -> None:
        if self.can_create:
            @router.post("", status_code=201, summary=f"Create one or many {self.prefix}")
            def create(db: DbDep, principal: UserDep, settings: SettingsDep,
                       body: BodyDep) -> JSON:
                items, many = bulk_items(body, self.singular, self.plural)
                kind = self.types[0] if self.types and len(self.types) == 1 else None
                created = [resource_lifecycle.create_resource(db, principal, settings, item,
                                                              resource_type=kind) for item in items]
                db.commit()
                listing = resource_list.decorate(db, principal, Listing(
                    catalogue.load_many(db, [r.id for r in created]), len(created), 1, None))
                ctx = self.record_context(settings, principal)
                if many:
                    return JSON({self.plural: self.records(db, listing, ctx)}, status_code=201)
                return self.one(db, listing, ctx, status=201)

        @router.patch("", summary=f"Bulk update {self.prefix}")
        def patch_many(request: Request, db: DbDep, principal: UserDep, settings: SettingsDep,
                       body: BodyDep) -> JSON:
            mode = request.query_params.get("patch-all")
            if mode is not None:
                return self.patch_all(request, db, principal, settings, body, mode)
            if not settings.ENABLE_BULK_UPDATE:
                raise MethodNotAllowed('Method "PATCH" not allowed.')
            items, _ = bulk_items(body, self.singular, self.plural)
            ids = catalogue.bulk_ids(items, self.plural)
            rows = catalogue.load_many(db, ids, self.types)
            for row, data in zip(rows, items, strict=True):
                catalogue.ensure_visible(db, principal, settings, row)
                self.apply_patch(db, principal, settings, row,
                                 {k: v for k, v in data.items() if k not in ("id", "pk")})
            db.commit()
            self.after_commit(db, settings)
            listing = resource_list.decorate(db, principal, Listing(
                catalogue.load_many(db, ids), len(ids), 1, None))
            ctx = self.record_context(settings, principal)
            return JSON({self.plural: self.records(db, listing, ctx)})

        if self.can_delete:
            @router.delete("", status_code=204, summary=f"Delete many {self.prefix}")
            def delete_many(db: DbDep, principal: UserDep, settings: SettingsDep, kinds: KindsDep,
                            body: BodyDep):
                ids = catalogue.bulk_ids(body, self.plural)
                rows = catalogue.load_many(db, ids, self.types)
                for row in rows:
                    catalogue.ensure_visible(db, principal, settings, row)
                resource_lifecycle.delete_resources(db, principal, settings, rows, kinds=kinds)
                db.commit()
                return no_content()

    def patch_all(self, request: Request, db, principal, settings, body, mode: str) -> JSON:
        """``patch-all=true``: load and save one by one; ``patch-all=query``: one UPDATE."""
        if not settings.ENABLE_PATCH_ALL:
            raise MethodNotAllowed('Method "PATCH" not allowed.')
        if not isinstance(body, Mapping) or not body:
            raise InvalidInput("patch-all needs a JSON object of the fields to set")
        ctx = list_context(request, db, principal)
        ids_stmt = resource_list.matching_ids_for_update(ctx, self.base())
        if mode.lower() == "query":
            values = _query_update_values(body)
            result = db.execute(update(Resource).where(Resource.id.in_(ids_stmt.scalar_subquery()))
                                .values(**values).execution_options(synchronize_session=False))
            db.commit()
            return JSON({"meta": {"updated": result.rowcount}})
        if mode.lower() not in ("true", "1"):
            raise InvalidInput(f"Invalid value for patch-all: {mode}")
        ids = list(db.scalars(ids_stmt))
        updated = 0
        for start in range(0, len(ids), 500):
            for row in catalogue.load_many(db, ids[start:start + 500]):
                resource_lifecycle.patch_resource(db, principal, settings, row, body)
                updated += 1
        db.commit()
        return JSON({"meta": {"updated": updated}})

    # -- items ---------------------------------------------------------------------------

    def register_item(self, router: APIRouter) -> None:
        @router.get("/{resource_id}", summary=f"One of {self.prefix}")
        def detail(resource_id: IdPath, db: ReadDbDep, principal: PrincipalDep,
                   settings: SettingsDep,
                   include: Annotated[list[str] | None, Query(alias="include[]")] = None,
                   exclude: Annotated[list[str] | None, Query(alias="exclude[]")] = None,
                   api_preset: str | None = None) -> JSON:
            listing = catalogue.get_resource(db, principal, settings, resource_id,
                                             resource_type=self.types)
            record = self.records(db, listing, self.record_context(settings, principal), detail=True)[0]
            return JSON({self.singular: select_fields(record, include or [], exclude or [],
                                                      api_preset)})

        def write(resource_id: str, db, principal, settings, body) -> JSON:
            if isinstance(body, Mapping) and set(body) == {self.singular} and \
                    isinstance(body[self.singular], Mapping):
                body = body[self.singular]
            listing = catalogue.get_resource(db, principal, settings, resource_id,
                                             resource_type=self.types)
            ctx = self.record_context(settings, principal)
            current = self.records(db, listing, ctx, detail=True)[0]
            self.apply_patch(db, principal, settings, listing.rows[0], body, current)
            db.commit()
            self.after_commit(db, settings)
            listing = catalogue.get_resource(db, principal, settings, resource_id)
            return self.one(db, listing, ctx)

        @router.put("/{resource_id}", summary=f"Update one of {self.prefix}")
        def put(resource_id: IdPath, db: DbDep, principal: UserDep, settings: SettingsDep,
                body: BodyDep) -> JSON:
            return write(resource_id, db, principal, settings, body)

        @router.patch("/{resource_id}", summary=f"Partially update one of {self.prefix}")
        def patch(resource_id: IdPath, db: DbDep, principal: UserDep,
                  settings: SettingsDep, body: BodyDep) -> JSON:
            return write(resource_id, db, principal, settings, body)

        if self.can_delete:
            @router.delete("/{resource_id}", status_code=204, summary=f"Delete one of {self.prefix}")
            def delete(resource_id: IdPath, db: DbDep, principal: UserDep,
                       settings: SettingsDep, kinds: KindsDep):
                resource = catalogue.load_for_write(db, principal, settings, resource_id, self.types)
                resource_lifecycle.delete_resources(db, principal, settings, [resource], kinds=kinds)
                db.commit()
                return no_content()

        if self.prefix == "resources":
            @router.post("/{resource_id}/favorite", summary="Add to the requester's favourites")
            def add_favorite(resource_id: IdPath, db: DbDep, principal: UserDep,
                             settings: SettingsDep) -> JSON:
                resource = catalogue.load_for_write(db, principal, settings, resource_id)
                catalogue.add_favorite(db, principal, resource)
                db.commit()
                return JSON({"message": "Successfuly added resource to favorites"})

            @router.delete("/{resource_id}/favorite", summary="Remove from the favourites")
            def remove_favorite(resource_id: IdPath, db: DbDep, principal: UserDep,
                                settings: SettingsDep) -> JSON:
                resource = catalogue.load_for_write(db, principal, settings, resource_id)
                catalogue.remove_favorite(db, principal, resource)
                db.commit()
                return JSON({"message": "Successfuly removed resource from favorites"})

        @router.get("/{resource_id}/{field_name}", summary="Related objects of one field")
        def related(resource_id: IdPath, field_name: str, db: DbDep, principal: PrincipalDep,
                    settings: SettingsDep) -> JSON:
            if field_name not in self.related_fields:
                raise InvalidInput(f"Invalid field name: {field_name}")
            listing = catalogue.get_resource(db, principal, settings, resource_id,
                                             resource_type=self.types)
            record = self.records(db, listing, self.record_context(settings, principal), detail=True)[0]
            return JSON({self.related_key(field_name): record[field_name]})

    def related_key(self, field_name: str) -> str:
        """The key the related objects of ``field_name`` are returned under (dynamic-rest names
        it after the related serializer)."""
        return field_name


def resource_list_response(request: Request, db, principal, settings, base: list) -> JSON:
    """A ``resources`` page restricted by ``base`` (a user's, a group's resources)."""
    listing = resource_list.list_resources(list_context(request, db, principal), base=base)
    items = records(listing, RecordContext(siteurl.base(settings), principal))
    return JSON(envelope(request, "resources", items, total=listing.total, page=listing.page,
                         page_size=listing.page_size, has_next=listing.has_next))


def bulk_items(body: Any, singular: str, plural: str) -> tuple[list[Mapping[str, Any]], bool]:
    """One object, ``{singular: {...}}``, ``{plural: [...]}`` or a list (dynamic-rest)."""
    if isinstance(body, list):
        items, many = body, True
    elif isinstance(body, Mapping) and set(body) == {plural} and isinstance(body[plural], list):
        items, many = body[plural], True
    elif isinstance(body, Mapping) and set(body) == {singular} and isinstance(body[singular], Mapping):
        items, many = [body[singular]], False
    elif isinstance(body, Mapping):
        items, many = [body], False
    else:
        raise InvalidInput("Expected a JSON object or a list of objects")
    if not items or not all(isinstance(i, Mapping) for i in items):
        raise InvalidInput("Expected a JSON object or a non-empty list of objects")
    return list(items), many


QUERY_UPDATABLE = {
    "title": str, "abstract": str, "purpose": str, "attribution": str, "doi": str,
    "edition": str, "maintenance_frequency": str, "constraints_other": str,
    "supplemental_information": str, "data_quality_statement": str, "language": str,
    "featured": bool, "is_published": bool, "is_approved": bool, "advertised": bool,
    "metadata_only": bool,
}


def _query_update_values(body: Mapping[str, Any]) -> dict[str, Any]:
    values = {}
    for key, value in body.items():
        kind = QUERY_UPDATABLE.get(key)
        if kind is None:
            raise InvalidInput(f"{key}: cannot be updated with patch-all=query")
        if not isinstance(value, kind) or (kind is str and "\x00" in value):
            raise InvalidInput(f"{key}: invalid value")
        values[key] = value
    if any(k in values for k in ("featured", "is_approved", "is_published")):
        raise PermissionDenied("Flags cannot be changed with patch-all=query")
    values["last_updated"] = utcnow()
    return values


router = APIRouter()
router.include_router(ResourceRoutes("resources", "resources", "resource").router())
# The typed collections are subclasses with their extras: datasets in routes/datasets.py,
# documents in routes/documents.py, geoapps and geostories in routes/geoapps.py.
