"""cartotheca.api.routes.facets: GET /api/v2/facets and /api/v2/facets/{facet} (GeoNode 4.2+)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Request

from cartotheca import siteurl
from cartotheca.api.deps import DbDep, PrincipalDep, SettingsDep, list_context
from cartotheca.api.responses import JSON
from cartotheca.api.schemas.facets import facet_detail, facet_list
from cartotheca.catalogue import facets

router = APIRouter(prefix="/api/v2/facets", tags=["facets"])


def flag(request: Request, name: str) -> bool:
    """GeoNode's lenient booleans: t..., y..., 1 are true; anything else is false."""
    word = request.query_params.get(name, "").strip().lower()
    return word[:1] in ("t", "y") or word == "1"


def facet_params(
    lang: Annotated[str | None, Query(description="language of the labels")] = None,
    add_links: Annotated[str | None, Query(description="true: add each facet's link")] = None,
    include_config: Annotated[str | None, Query(description="true: add each facet's config")] = None,
    extent: Annotated[str | None, Query(description="count only resources in minx,miny,maxx,maxy")] = None,
    search: Annotated[str | None, Query(description="count only resources matching the text")] = None,
    favorite: Annotated[str | None, Query(description="true: count only the requester's favourites")] = None,
) -> None:
    """Documents the parameters; ``filter{...}`` keys narrow the counted resources as in lists."""


def topic_params(
    page: Annotated[str | None, Query(description="zero-based page of topics")] = None,
    page_size: Annotated[str | None, Query(description="topics per page (default 10)")] = None,
    topic_contains: Annotated[str | None, Query(description="only topics whose label has this text")] = None,
    key: Annotated[list[str] | None, Query(description="only these topics, listed even if unused")] = None,
) -> None:
    """Documents the topic parameters of one facet."""


@router.get("", summary="List the facets", dependencies=[Depends(facet_params)])
def list_facets(
    request: Request, db: DbDep, principal: PrincipalDep, settings: SettingsDep,
    include_topics: Annotated[str | None, Query(description="true: each facet's first topics")] = None,
) -> JSON:
    found = facets.list_facets(list_context(request, db, principal),
                               include_topics=flag(request, "include_topics"))
    return JSON(facet_list(request, siteurl.base(settings), found, add_links=flag(request, "add_links"),
                           include_config=flag(request, "include_config")))


@router.get("/{facet}", summary="One facet with a page of its topics",
            dependencies=[Depends(facet_params), Depends(topic_params)])
def get_facet(request: Request, facet: Annotated[str, Path(description="facet name")],
              db: DbDep, principal: PrincipalDep, settings: SettingsDep) -> JSON:
    found, page, tq = facets.get_facet(list_context(request, db, principal), facet)
    return JSON(facet_detail(request, siteurl.base(settings), found, page, tq,
                             add_links=flag(request, "add_links"),
                             include_config=flag(request, "include_config")))
