"""cartotheca.api.routes.discovery: the API root and the OpenAPI schema (YAML or JSON)."""

from __future__ import annotations

from typing import Annotated

import yaml
from fastapi import APIRouter, Query, Request
from starlette.responses import Response

from cartotheca import siteurl
from cartotheca.api.deps import SettingsDep
from cartotheca.api.responses import JSON

router = APIRouter(tags=["discovery"])

YAML_TYPE = "application/vnd.oai.openapi"
JSON_TYPE = "application/vnd.oai.openapi+json"


def registered_collections(request: Request) -> list[str]:
    paths = set(request.app.openapi().get("paths", {}))
    found = set()
    for path in paths:
        if path.startswith("/api/v2/"):
            head = path[len("/api/v2/"):].split("/")[0]
            if head and "{" not in head and head not in ("schema", "openapi.json", "docs",
                                                         "resource-service", "management", "facets",
                                                         "harvesters", "harvesting-sessions"):
                found.add(head)
    return sorted(found)


@router.get("/api/v2", summary="The API's collections")
def api_root(request: Request, settings: SettingsDep) -> JSON:
    base = siteurl.base(settings)
    return JSON({name: f"{base}/api/v2/{name}" for name in registered_collections(request)})


@router.get("/api/v2/schema", summary="The OpenAPI document of this API",
            responses={200: {"content": {YAML_TYPE: {}, JSON_TYPE: {}}}})
def api_schema(
    request: Request,
    settings: SettingsDep,
    format: Annotated[str | None, Query(description="openapi (YAML) or openapi-json")] = None,
    lang: Annotated[str | None, Query(description="language of descriptions")] = None,
) -> Response:
    document = request.app.openapi()
    if _wants_json(format, request.headers.get("accept", "")):
        return JSON(document, media_type=JSON_TYPE)
    body = yaml.safe_dump(document, sort_keys=False, allow_unicode=True)
    return Response(body, media_type=YAML_TYPE)


def _wants_json(format: str | None, accept: str) -> bool:
    if format:
        return format.lower() in ("openapi-json", "json")
    for part in accept.split(","):
        media = part.split(";")[0].strip().lower()
        if media in (JSON_TYPE, "application/json"):
            return True
        if media in (YAML_TYPE, "application/yaml", "application/x-yaml", "text/yaml"):
            return False
    return False
