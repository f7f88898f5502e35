"""cartotheca.api.routes.metadata: the metadata records behind every record's ``metadata`` links.

The CSW GetRecordById requests those links make (Atom, DIF, Dublin Core, ebRIM, FGDC, ISO) are
answered by the catalogue's CSW (``api/routes/csw.py``); here ``/showmetadata/xsl/{id}`` serves
the ISO record with a stylesheet, as GeoNode's links do. Only what the requester may view is
returned.
"""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from cartotheca import siteurl
from cartotheca.api.deps import DbDep, PrincipalDep, SettingsDep
from cartotheca.catalogue import metadata_formats
from cartotheca.catalogue import resources as catalogue

router = APIRouter(include_in_schema=False)
XML = "text/xml; charset=utf-8"


@router.get(f"/{metadata_formats.XSL_PATH}")
def metadata_xsl() -> Response:
    return Response(metadata_formats.METADATA_XSL, media_type="text/xsl; charset=utf-8")


@router.get("/showmetadata/xsl/{resource_id}")
def iso_with_xsl(resource_id: str, db: DbDep, principal: PrincipalDep, settings: SettingsDep) -> Response:
    resource = catalogue.get_resource(db, principal, settings, resource_id).rows[0]
    return Response(metadata_formats.iso_with_xsl(resource, siteurl.base(settings)), media_type=XML)
