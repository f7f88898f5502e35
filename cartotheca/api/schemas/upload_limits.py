"""cartotheca.api.schemas.upload_limits: upload size and parallelism limits on the wire (compat §9)."""

from __future__ import annotations

from typing import Any

from cartotheca.catalogue.upload_limits import ParallelismLimit, SizeLimit, size_label

SIZE_PATH = "upload-size-limits"
PARALLELISM_PATH = "upload-parallelism-limits"


def size_limit_record(limit: SizeLimit, site: str) -> dict[str, Any]:
    return {"slug": limit.slug, "description": limit.description, "max_size": limit.max_size,
            "max_size_label": size_label(limit.max_size), "link": f"{site}/api/v2/{SIZE_PATH}/{limit.slug}"}


def parallelism_limit_record(limit: ParallelismLimit, site: str) -> dict[str, Any]:
    return {"slug": limit.slug, "description": limit.description, "max_number": limit.max_number,
            "link": f"{site}/api/v2/{PARALLELISM_PATH}/{limit.slug}"}
