"""cartotheca.api.schemas.facets: facets and their topics on the wire (GeoNode's facets API).

A facet is ``{name, filter, label, type, hierarchical, order}`` (thesauri add ``is_localized``);
its ``topics`` are ``{page, page_size, start, total, items}`` with ``page`` zero-based, and each
item ``{key, label, count, ...}``. A requested ``key`` no visible resource has is listed without
``count``, as GeoNode lists it.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request

from cartotheca.catalogue.facets import Facet, Topic, TopicPage, TopicQuery


def facet_info(facet: Facet, *, include_config: bool = False) -> dict[str, Any]:
    info: dict[str, Any] = {
        "name": facet.name,
        "filter": facet.filter,
        "label": facet.label,
        "type": facet.type,
        "hierarchical": facet.hierarchical,
        "order": facet.order,
    }
    if facet.is_localized is not None:
        info["is_localized"] = facet.is_localized
    if include_config:
        info["config"] = dict(facet.config)
    return info


def topic_record(topic: Topic) -> dict[str, Any]:
    out: dict[str, Any] = {"key": topic.key, "label": topic.label}
    if topic.count is not None:
        out["count"] = topic.count
    for name, value in topic.extra.items():
        out[name] = [topic_record(t) for t in value] if name == "items" else value
    return out


def topics_record(page: TopicPage) -> dict[str, Any]:
    return {
        "page": page.page,
        "page_size": page.page_size,
        "start": page.start,
        "total": page.total,
        "items": [topic_record(t) for t in page.items],
    }


def facet_url(site_base: str, name: str, items: list[tuple[str, str]]) -> str:
    return f"{site_base}/api/v2/facets/{name}?{urlencode(items)}"


def facet_list(request: Request, site_base: str, facets: list[tuple[Facet, TopicPage | None]], *,
               add_links: bool, include_config: bool) -> dict[str, Any]:
    lang = request.query_params.get("lang")
    out = []
    for facet, page in facets:
        info = facet_info(facet, include_config=include_config)
        if add_links:
            # As GeoNode: the facet's own URL, with lang only when the client chose one.
            info["link"] = facet_url(site_base, facet.name, [("add_links", "True")]
                                     + ([("lang", lang)] if lang else []))
        if page is not None:
            info["topics"] = topics_record(page)
        out.append(info)
    return {"facets": out}


def facet_detail(request: Request, site_base: str, facet: Facet, page: TopicPage, tq: TopicQuery,
                 *, add_links: bool, include_config: bool) -> dict[str, Any]:
    info = facet_info(facet, include_config=include_config)
    if add_links:
        # prev/next keep the request's filters, keys and text, so the counts stay comparable.
        kept = [(k, v) for k, v in request.query_params.multi_items() if k != "page"]
        has_next = page.total > (tq.page + 1) * tq.page_size
        info["prev"] = facet_url(site_base, facet.name, [*kept, ("page", str(tq.page - 1))]) \
            if tq.page > 0 else None
        info["next"] = facet_url(site_base, facet.name, [*kept, ("page", str(tq.page + 1))]) \
            if has_next else None
    if tq.topic_contains:
        info["topic_contains"] = tq.topic_contains
    info["topics"] = topics_record(page)
    return info
