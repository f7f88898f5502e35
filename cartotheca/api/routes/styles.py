"""cartotheca.api.routes.styles: a dataset style's SLD at ``/styles/{workspace}/{name}.sld``
(the ``sld_url`` of the dataset API), for whoever may view the dataset."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from sqlalchemy import select
from starlette.responses import Response

from cartotheca.api.deps import DbDep, get_principal, settings_of
from cartotheca.catalogue.auth import Principal
from cartotheca.catalogue.datasets import get_dataset_by_id
from cartotheca.db.models import Style
from cartotheca.errors import NotFound
from cartotheca.settings import Settings

router = APIRouter()

SLD_MEDIA_TYPE = "application/vnd.ogc.sld+xml"


@router.get("/styles/{workspace}/{filename}", include_in_schema=False)
def style_sld(workspace: str, filename: str, db: DbDep,
              principal: Annotated[Principal, Depends(get_principal)],
              settings: Annotated[Settings, Depends(settings_of)]) -> Response:
    if not filename.endswith(".sld"):
        raise NotFound()
    style = db.execute(select(Style.dataset_id, Style.sld_body).where(
        Style.workspace == workspace, Style.name == filename[:-len(".sld")])).first()
    if style is None:
        raise NotFound()
    get_dataset_by_id(db, principal, settings, style.dataset_id)  # NotFound unless viewable
    return Response(style.sld_body, media_type=SLD_MEDIA_TYPE)
