"""cartotheca.api.responses: compact JSON responses encoded with orjson."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response


class JSON(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content, option=orjson.OPT_NON_STR_KEYS)


def no_content() -> Response:
    # GeoNode keeps the JSON content type on empty bodies.
    return Response(status_code=204, media_type="application/json")
