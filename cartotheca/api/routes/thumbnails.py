"""cartotheca.api.routes.thumbnails: serving thumbnails and setting them (upload or drawn from a box).

``GET /thumbnails/<uuid>.png`` serves a stored thumbnail to whoever may view its resource;
``PUT /api/v2/resources/{id}/set_thumbnail`` and ``POST .../set_thumbnail_from_bbox`` set one.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi import Path as PathParam
from starlette.responses import Response

from cartotheca.api.deps import DbDep, KindsDep, PrincipalDep, SettingsDep, UserDep, read_body
from cartotheca.api.multipart import TooLarge, stage_multipart
from cartotheca.api.responses import JSON
from cartotheca.catalogue import resources as catalogue
from cartotheca.catalogue import thumbnails
from cartotheca.errors import InvalidInput, NotFound

router = APIRouter()
IdPath = Annotated[str, PathParam(description="integer id of the resource")]
FILE_FIELD = "file"
# Browsers and tiles clients revalidate after a minute; the ETag makes that a 304.
MAX_AGE = 60


@router.get("/thumbnails/{filename}", include_in_schema=False)
def thumbnail(filename: str, request: Request, db: DbDep, principal: PrincipalDep,
              settings: SettingsDep) -> Response:
    if not filename.endswith(".png"):
        raise NotFound()
    data, public = thumbnails.visible_thumbnail(db, principal, settings, filename[:-len(".png")])
    etag = '"' + hashlib.sha256(data).hexdigest()[:32] + '"'
    headers = {"ETag": etag,
               "Cache-Control": f"{'public' if public else 'private'}, max-age={MAX_AGE}"}
    if not public:
        headers["Vary"] = "Authorization, Cookie"
    if etag in [t.strip() for t in request.headers.get("if-none-match", "").split(",")]:
        return Response(status_code=304, headers=headers)
    return Response(data, media_type="image/png", headers=headers)


@router.put("/api/v2/resources/{resource_id}/set_thumbnail", tags=["resources"],
            summary="Set the thumbnail from an image upload, a base64 image or an image URL")
async def set_thumbnail(request: Request, resource_id: IdPath, db: DbDep, principal: UserDep,
                        settings: SettingsDep) -> JSON:
    resource = catalogue.load_for_write(db, principal, settings, resource_id)
    value = await _file_value(request)
    url = thumbnails.set_thumbnail(db, principal, settings, resource, value)
    db.commit()
    return JSON({"thumbnail_url": url})


@router.post("/api/v2/resources/{resource_id}/set_thumbnail_from_bbox", tags=["resources"],
             summary="Draw the thumbnail of a dataset or map over a box")
def set_thumbnail_from_bbox(resource_id: IdPath, db: DbDep, principal: UserDep, settings: SettingsDep,
                            kinds: KindsDep, body: Annotated[Any, Depends(read_body)]) -> JSON:
    resource = catalogue.load_for_write(db, principal, settings, resource_id)
    url = thumbnails.set_thumbnail_from_bbox(db, principal, settings, kinds.thumbnails, resource, body)
    db.commit()
    return JSON({"message": "Thumbnail correctly created.", "success": True, "thumbnail_url": url})


async def _file_value(request: Request) -> Any:
    """``file`` from a multipart upload (file or text part), or from a JSON/form body."""
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "multipart/form-data":
        body = await read_body(request)
        return body.get(FILE_FIELD) if isinstance(body, dict) else None
    folder = Path(tempfile.gettempdir()) / f"cartotheca-thumb-{uuid.uuid4().hex}"
    try:
        try:
            form = await stage_multipart(request, folder, thumbnails.MAX_BYTES + 64 * 1024)
        except TooLarge:
            raise InvalidInput("File must not exceed 1MB") from None
        if FILE_FIELD in form.files:
            return form.path(FILE_FIELD).read_bytes()
        return form.fields.get(FILE_FIELD)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
