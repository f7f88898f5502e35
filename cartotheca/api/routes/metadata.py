"""cartotheca.api.routes.metadata: the metadata records behind every record's ``metadata`` links.

``/catalogue/csw`` answers the CSW GetRecordById requests those links make (Atom, DIF, Dublin
Core, ebRIM, FGDC, ISO), and ``/showmetadata/xsl/{id}`` the ISO record with a stylesheet, as
GeoNode's links do. Only what the requester may view is returned.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from cartotheca.api.deps import DbDep, PrincipalDep, SettingsDep
from cartotheca.catalogue import metadata_formats
from cartotheca.catalogue import resources as catalogue
from cartotheca.errors import InvalidInput

router = APIRouter(include_in_schema=False)
XML = "text/xml; charset=utf-8"


@router.get("/catalogue/csw")
def csw(request: Request, db: DbDep, principal: PrincipalDep, settings: SettingsDep) -> Response:
    params = {k.lower(): v for k, v in request.query_params.items()}
    if params.get("service", "CSW").upper() != "CSW":
        return _exception("InvalidParameterValue", "service must be CSW", "service")
    if (params.get("request") or "").lower() != "getrecordbyid":
        return _exception("OperationNotSupported", "Only GetRecordById is offered here", "request")
    ids = [i.strip() for i in (params.get("id") or "").split(",") if i.strip()]
    if not ids:
        return _exception("MissingParameterValue", "Parameter id is required", "id")
    schema = params.get("outputschema") or metadata_formats.CSW  # Dublin Core by default
    try:
        resources = metadata_formats.visible_records(db, principal, settings, ids)
        body = metadata_formats.record_response(resources, settings.site_base, schema)
    except InvalidInput as exc:
        return _exception("InvalidParameterValue", exc.message, "outputschema")
    return Response(body, media_type=XML)


@router.get(f"/{metadata_formats.XSL_PATH}")
def metadata_xsl() -> Response:
    return Response(metadata_formats.METADATA_XSL, media_type="text/xsl; charset=utf-8")


@router.get("/showmetadata/xsl/{resource_id}")
def iso_with_xsl(resource_id: str, db: DbDep, principal: PrincipalDep, settings: SettingsDep) -> Response:
    resource = catalogue.get_resource(db, principal, settings, resource_id).rows[0]
    return Response(metadata_formats.iso_with_xsl(resource, settings.site_base), media_type=XML)


def _exception(code: str, message: str, locator: str) -> Response:
    return Response(metadata_formats.exception_report(code, message, locator), status_code=400,
                    media_type=XML)
