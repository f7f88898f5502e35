"""cartotheca.api.stored_files: a file of the file store as an HTTP response.

A file in the local folder is answered by Starlette's ``FileResponse``, exactly as before. An
object of an S3-compatible store is streamed with the same wire behaviour: ``Accept-Ranges``,
one byte range as ``206`` (``416`` when it lies past the end), ``ETag`` and ``Last-Modified``,
and ``304`` when ``If-None-Match`` names the current tag. The object is opened before the
response starts, so an outage is a 503 rather than a cut-off body.
"""

from __future__ import annotations

import re
from email.utils import formatdate
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import FileResponse, Response, StreamingResponse

from cartotheca.filestore import FileStore, ObjectInfo

RANGE = re.compile(r"bytes=(\d*)-(\d*)")


class Unsatisfiable(Exception):
    pass


def stored_file_response(request: Request, files: FileStore, key: str, info: ObjectInfo, *,
                         media_type: str | None, headers: dict[str, str], filename: str,
                         disposition: str) -> Response:
    path = files.local_path(key)
    if path is not None:
        return FileResponse(path, media_type=media_type, headers=headers, filename=filename,
                            content_disposition_type=disposition)
    headers = {**headers, "Accept-Ranges": "bytes", "ETag": info.etag,
               "Last-Modified": formatdate(info.mtime, usegmt=True),
               "Content-Disposition": _disposition(disposition, filename)}
    if info.etag in [tag.strip() for tag in request.headers.get("if-none-match", "").split(",")]:
        return Response(status_code=304, headers=headers)
    try:
        span = _range(request, info)
    except Unsatisfiable:
        return Response(status_code=416, headers={"Content-Range": f"bytes */{info.size}"})
    start, stop = span or (0, info.size)
    headers["Content-Length"] = str(stop - start)
    status = 200
    if span is not None:
        status = 206
        headers["Content-Range"] = f"bytes {start}-{stop - 1}/{info.size}"
    if request.method == "HEAD":
        return Response(status_code=status, headers=headers, media_type=media_type)
    return StreamingResponse(files.open_range(key, start, stop), status_code=status, headers=headers,
                             media_type=media_type)


def _disposition(kind: str, filename: str) -> str:
    quoted = quote(filename)
    if quoted != filename:
        return f"{kind}; filename*=utf-8''{quoted}"
    return f'{kind}; filename="{filename}"'


def _range(request: Request, info: ObjectInfo) -> tuple[int, int] | None:
    """The one byte range asked for, as (start, stop); None for the whole object (no range, a
    stale ``If-Range``, or a header this reader does not take, which HTTP lets it ignore)."""
    header = request.headers.get("range")
    if header is None or request.method not in ("GET", "HEAD"):
        return None
    if_range = request.headers.get("if-range")
    if if_range is not None and if_range not in (info.etag, formatdate(info.mtime, usegmt=True)):
        return None
    match = RANGE.fullmatch(header.strip())
    if match is None or not (match[1] or match[2]):
        return None
    if not match[1]:  # the last n bytes
        length = int(match[2])
        if length == 0 or info.size == 0:
            raise Unsatisfiable()
        return max(0, info.size - length), info.size
    start = int(match[1])
    if start >= info.size:
        raise Unsatisfiable()
    stop = int(match[2]) + 1 if match[2] else info.size
    if stop <= start:
        return None  # "bytes=9-3" is no range at all
    return start, min(stop, info.size)
