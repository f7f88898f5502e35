"""cartotheca.api.routes.documents: the document collection, document uploads and downloads.

``POST /api/v2/documents`` takes a multipart ``doc_file`` (streamed to a staging folder and
refused beyond the ``document_upload_size`` limit while it arrives) or a ``doc_url``; it
answers 200 with the new record (the spec's status, where GeoNode says 201).
``/documents/{pk}/download`` serves the original (Range requests work) or redirects to a remote
document.
"""

from __future__ import annotations

import shutil
import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Request
from fastapi import Path as PathParam
from starlette.concurrency import run_in_threadpool
from starlette.responses import RedirectResponse, Response

from cartotheca.api.deps import DbDep, PrincipalDep, SettingsDep, UserDep, read_body
from cartotheca.api.multipart import StagedForm, TooLarge, stage_multipart
from cartotheca.api.responses import JSON
from cartotheca.api.routes.resources import ResourceRoutes
from cartotheca.api.schemas.documents import document_extras
from cartotheca.api.schemas.resources import RecordContext, records
from cartotheca.api.stored_files import stored_file_response
from cartotheca.catalogue import documents
from cartotheca.catalogue import resources as catalogue
from cartotheca.catalogue.documents import NewDocument
from cartotheca.catalogue.query import Listing, strict_bool
from cartotheca.errors import InvalidInput

IdPath = Annotated[str, PathParam(description="integer id of the document")]
FORM_ALLOWANCE = 256 * 1024  # room for the text parts and part headers beside the file
# Shown inline by /link (browsers display these safely); everything else is an attachment.
INLINE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "application/pdf", "text/plain"})


class DocumentRoutes(ResourceRoutes):
    """The resource routes over documents, each record completed with its document row."""

    def records(self, db, listing: Listing, ctx: RecordContext, *,
                detail: bool = False) -> list[dict[str, Any]]:
        rows = documents.document_rows(db, [r.id for r in listing.rows])
        out = []
        for resource, record in zip(listing.rows, records(listing, ctx), strict=True):
            record.update(document_extras(resource, rows.get(resource.id), ctx.site))
            out.append(record)
        return out

    def apply_patch(self, db, principal, settings, row, body, current=None) -> None:
        documents.patch_document(db, principal, settings, row, body, current)


COLLECTION = DocumentRoutes("documents", "documents", "document", types=("document",),
                            can_create=False)
router = APIRouter()


@router.post("/api/v2/documents", tags=["documents"],
             summary="Upload a document (multipart doc_file) or link a remote one (doc_url)")
async def create_document(request: Request, db: DbDep, principal: UserDep,
                          settings: SettingsDep) -> JSON:
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "multipart/form-data":
        body = await read_body(request)
        return JSON(await run_in_threadpool(_create, db, principal, settings, _from_fields(body)))
    folder = settings.upload_dir / f"document-{uuid.uuid4().hex}"
    limit = await run_in_threadpool(documents.max_bytes, settings, db)
    try:
        try:
            form = await stage_multipart(request, folder, limit + FORM_ALLOWANCE)
        except TooLarge:
            raise documents.too_large(limit) from None
        new = _from_form(form)
        return JSON(await run_in_threadpool(_create, db, principal, settings, new))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _from_form(form: StagedForm) -> NewDocument:
    new = _from_fields(form.fields)
    staged = form.files.get("doc_file")
    if staged is None:
        return new
    return NewDocument(title=new.title, abstract=new.abstract, file=form.path("doc_file"),
                       file_name=staged.filename, doc_url=new.doc_url, extension=new.extension,
                       metadata_only=new.metadata_only)


def _from_fields(fields: Any) -> NewDocument:
    if not isinstance(fields, dict):
        raise InvalidInput("Expected the document's fields as an object or a form")
    if fields.get("file_path"):
        raise InvalidInput("file_path is not accepted: upload the file as doc_file",
                           code=documents.CODE)
    if "doc_file" in fields:
        raise InvalidInput("doc_file must be a file part of a multipart/form-data body",
                           code=documents.CODE)
    text = {k: _text(fields, k) for k in ("title", "abstract", "doc_url", "extension")}
    flag = fields.get("metadata_only")
    metadata_only = None
    if flag not in (None, ""):
        metadata_only = flag if isinstance(flag, bool) else strict_bool(str(flag), "metadata_only")
    return NewDocument(title=text["title"], abstract=text["abstract"], doc_url=text["doc_url"],
                       extension=text["extension"], metadata_only=metadata_only)


def _text(fields: dict, key: str) -> str | None:
    value = fields.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{key}: expected a string")
    return value.strip() or None


def _create(db, principal, settings, new: NewDocument) -> dict[str, Any]:
    try:
        resource = documents.create_document(db, principal, settings, new)
        db.commit()
    except BaseException:
        db.rollback()  # also removes a file already moved into place
        raise
    listing = catalogue.get_resource(db, principal, settings, resource.id)
    ctx = COLLECTION.record_context(settings, principal)
    return {"document": COLLECTION.records(db, listing, ctx, detail=True)[0]}


router.include_router(COLLECTION.router())


def _serve(request: Request, document_id: str, db, principal, settings, disposition: str) -> Response:
    resource, document, stored = documents.for_download(db, principal, settings, document_id)
    if document.doc_url or stored is None:
        return RedirectResponse(document.doc_url or "", status_code=302)
    if disposition == "inline" and document.mime_type not in INLINE_TYPES:
        disposition = "attachment"
    headers = {"X-Content-Type-Options": "nosniff", "Cache-Control": "private, max-age=0"}
    return stored_file_response(request, stored.files, stored.key, stored.info,
                                media_type=document.mime_type, headers=headers,
                                filename=document.file_name or f"{resource.uuid}.{document.extension}",
                                disposition=disposition)


def _also(path: str):
    """HEAD and the trailing-slash form of a GET route, kept out of the schema (one operation
    per path and method there)."""
    def register(view):
        router.head(path, include_in_schema=False)(view)
        router.api_route(path + "/", methods=["GET", "HEAD"], include_in_schema=False)(view)
        return view
    return register


@_also("/documents/{document_id}/download")
@router.get("/documents/{document_id}/download", tags=["documents"],
            summary="Download a document's original file (Range requests work)")
def download(request: Request, document_id: IdPath, db: DbDep, principal: PrincipalDep,
             settings: SettingsDep) -> Response:
    return _serve(request, document_id, db, principal, settings, "attachment")


@_also("/documents/{document_id}/link")
@router.get("/documents/{document_id}/link", tags=["documents"],
            summary="A document's file for viewing in the browser (the record's href)")
def view(request: Request, document_id: IdPath, db: DbDep, principal: PrincipalDep,
         settings: SettingsDep) -> Response:
    return _serve(request, document_id, db, principal, settings, "inline")
