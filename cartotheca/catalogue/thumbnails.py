"""cartotheca.catalogue.thumbnails: a resource's thumbnail: checked, stored, drawn, found.

A thumbnail is a PNG kept in the file store under ``thumbnails/<uuid>.png`` (a file under
``DATA_DIR`` by default, an object with ``OBJECT_STORE_URL``) served at
``{SITEURL}thumbnails/<uuid>.png``; ``Resource.thumbnail_url`` holds that URL (or, when a client
sets one, an external image URL). Uploaded images are decoded before they are kept: the bytes
must really be a PNG or JPEG, their header's size is checked before any pixel is decoded (a
small file can declare a huge image), and they are re-encoded as PNG within THUMBNAIL_SIZE.
Datasets and maps are drawn by the map server's drawer, which the caller hands in.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import uuid as uuid_mod
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import rasterio
from rasterio.enums import Resampling
from rasterio.errors import RasterioError
from rasterio.io import MemoryFile
from sqlalchemy import select
from sqlalchemy.orm import Session

from cartotheca import siteurl
from cartotheca.catalogue import permissions as perms
from cartotheca.catalogue import resources as catalogue
from cartotheca.catalogue.accounts import internal_group_ids
from cartotheca.catalogue.auth import Principal
from cartotheca.catalogue.kinds import ThumbnailDrawer
from cartotheca.db.base import utcnow
from cartotheca.db.models import Resource
from cartotheca.db.session import on_commit
from cartotheca.errors import InvalidInput, MethodNotAllowed, NotFound, StoreUnavailable
from cartotheca.filestore.stores import file_store
from cartotheca.settings import Settings

MAX_BYTES = 1024 * 1024  # GeoNode: "File must not exceed 1MB"
MAX_PIXELS = 25_000_000  # declared size beyond which an image is not decoded at all
SIGNATURES = {b"\x89PNG\r\n\x1a\n": "PNG", b"\xff\xd8\xff": "JPEG"}
DATA_URL = re.compile(r"^data:image/(png|jpe?g);base64,", re.IGNORECASE)
IMAGE_URL = re.compile(r"\.(png|jpe?g)$", re.IGNORECASE)
THUMBNAIL_TYPES = ("dataset", "map")  # the types a thumbnail can be drawn for from a box


def thumbnail_key(resource_uuid: str) -> str:
    """The file store key of a resource's thumbnail; the uuid is checked so it cannot name
    another object."""
    try:
        text = str(uuid_mod.UUID(resource_uuid))
    except (ValueError, TypeError, AttributeError):
        raise NotFound() from None
    return f"thumbnails/{text}.png"


def thumbnail_path(settings: Settings, resource_uuid: str) -> Path:
    """Where the local file store (the default) keeps a resource's thumbnail."""
    return settings.DATA_DIR / thumbnail_key(resource_uuid)


def thumbnail_url(settings: Settings, resource_uuid: str) -> str:
    return f"{siteurl.url(settings)}thumbnails/{resource_uuid}.png"


def is_own_url(settings: Settings, url: str | None, resource_uuid: str) -> bool:
    return url == thumbnail_url(settings, resource_uuid)


# -- decoding uploads -----------------------------------------------------------------------


def decode_image(data: bytes, size: Sequence[int]) -> bytes:
    """``data`` (PNG or JPEG bytes) as a PNG no larger than ``size`` (width, height)."""
    if len(data) > MAX_BYTES:
        raise InvalidInput("File must not exceed 1MB")
    driver = next((name for magic, name in SIGNATURES.items() if data.startswith(magic)), None)
    if driver is None:
        raise InvalidInput("The file must be an image with format (png, jpeg or jpg)")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", rasterio.errors.NotGeoreferencedWarning)
            with MemoryFile(data) as memory, memory.open(driver=driver) as src:
                if src.width * src.height > MAX_PIXELS:
                    raise InvalidInput(f"The image is larger than {MAX_PIXELS} pixels")
                scale = min(1.0, size[0] / src.width, size[1] / src.height)
                width, height = max(1, round(src.width * scale)), max(1, round(src.height * scale))
                pixels = src.read(out_shape=(src.count, height, width), resampling=Resampling.average)
                pixels = _as_rgba(src, pixels)
    except RasterioError:
        raise InvalidInput("The file is not a readable PNG or JPEG image") from None
    return encode_png(pixels)


def _as_rgba(src, pixels: np.ndarray) -> np.ndarray:
    """Grey, grey+alpha, palette, RGB or RGBA bands as 8-bit RGBA."""
    if pixels.dtype != np.uint8:
        pixels = (pixels >> 8).astype(np.uint8) if pixels.dtype == np.uint16 else pixels.astype(np.uint8)
    count, height, width = pixels.shape
    if count == 1 and src.colorinterp[0].name == "palette":
        table = np.zeros((256, 4), dtype=np.uint8)
        for index, colour in src.colormap(1).items():
            table[index] = colour
        return np.moveaxis(table[pixels[0]], -1, 0)
    opaque = np.full((1, height, width), 255, dtype=np.uint8)
    if count == 1:
        return np.concatenate([pixels, pixels, pixels, opaque])
    if count == 2:
        return np.concatenate([pixels[:1], pixels[:1], pixels[:1], pixels[1:2]])
    if count == 3:
        return np.concatenate([pixels, opaque])
    return pixels[:4]


def encode_png(pixels: np.ndarray) -> bytes:
    """RGBA bands (4, height, width) as PNG bytes."""
    count, height, width = pixels.shape
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rasterio.errors.NotGeoreferencedWarning)
        with MemoryFile() as memory:
            with memory.open(driver="PNG", width=width, height=height, count=count, dtype="uint8") as dst:
                dst.write(pixels)
            return memory.read()


def parse_thumbnail(value: Any) -> bytes | str:
    """The ``file`` of set_thumbnail: image bytes (an upload, a base64 string or data URL) or
    an http(s) URL of a PNG/JPEG image, kept as the thumbnail URL."""
    if value is None or value == "":
        raise InvalidInput("Field file is required")
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if not isinstance(value, str):
        raise InvalidInput("Field file is required")
    text = value.strip()
    if text.lower().startswith(("http://", "https://")):
        parts = urlsplit(text)
        if len(text) > 2048 or not parts.netloc or not IMAGE_URL.search(parts.path):
            raise InvalidInput("The url must be of an image with format (png, jpeg or jpg)")
        return text
    match = DATA_URL.match(text)
    encoded = text[match.end():] if match else text
    if len(encoded) > math.ceil(MAX_BYTES / 3) * 4 + 4:
        raise InvalidInput("File must not exceed 1MB")
    try:
        return base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidInput("The file must be an image upload, a base64 image or an image URL") from None


# -- storing --------------------------------------------------------------------------------


def write_thumbnail(settings: Settings, resource: Resource, png: bytes) -> str:
    """Store ``png`` as the resource's thumbnail (atomically: readers never see half a file)."""
    file_store(settings).put_bytes(thumbnail_key(resource.uuid), png)
    url = thumbnail_url(settings, resource.uuid)
    resource.thumbnail_url = url
    resource.last_updated = utcnow()
    return url


def forget_thumbnails(session: Session, settings: Settings, resources: Sequence[Resource]) -> None:
    """Resources are about to be deleted: their stored thumbnails go once the deletion commits
    (a file is removed even when a URL set later replaced it as the thumbnail)."""
    keys = []
    for resource in resources:
        try:
            keys.append(thumbnail_key(resource.uuid))
        except NotFound:
            continue  # not a UUID (a harvested record's): no file can have been stored for it
    files = file_store(settings)

    def remove() -> None:
        for key in keys:
            files.delete(key)

    if keys:
        on_commit(session, remove, errors=(OSError, StoreUnavailable),
                  failure="removing deleted resources' thumbnails failed")


def set_thumbnail(session: Session, principal: Principal, settings: Settings, resource: Resource,
                  value: Any) -> str:
    """PUT set_thumbnail: an uploaded/base64 image is stored, a URL is kept as it is."""
    catalogue.require(session, principal, resource, perms.CHANGE_METADATA)
    parsed = parse_thumbnail(value)
    if isinstance(parsed, str):
        file_store(settings).delete(thumbnail_key(resource.uuid))
        resource.thumbnail_url = parsed
        resource.last_updated = utcnow()
        return parsed
    size = settings.THUMBNAIL_SIZE[:2]
    return write_thumbnail(settings, resource, decode_image(parsed, size))


def parse_bbox(body: Any) -> tuple[tuple[float, float, float, float], str]:
    """``{"bbox": [xmin, xmax, ymin, ymax], "srid": "EPSG:3857"}`` (GeoNode's x, x, y, y order)
    → ((minx, miny, maxx, maxy), crs)."""
    if not isinstance(body, Mapping):
        raise InvalidInput("Expected {\"bbox\": [xmin, xmax, ymin, ymax], \"srid\": \"EPSG:3857\"}")
    values = body.get("bbox")
    if isinstance(values, str):
        values = values.split(",")
    if not isinstance(values, list) or len(values) != 4:
        raise InvalidInput("bbox: expected [xmin, xmax, ymin, ymax]")
    try:
        xmin, xmax, ymin, ymax = (float(v) for v in values)
    except (TypeError, ValueError):
        raise InvalidInput("bbox: expected four numbers") from None
    if not all(math.isfinite(v) for v in (xmin, xmax, ymin, ymax)) or xmin >= xmax or ymin >= ymax:
        raise InvalidInput("bbox: expected xmin < xmax and ymin < ymax")
    srid = body.get("srid") or "EPSG:3857"
    if not isinstance(srid, str) or not re.fullmatch(r"(?i)epsg:\d{1,6}", srid.strip()):
        raise InvalidInput("srid: expected a code such as \"EPSG:3857\"")
    return (xmin, ymin, xmax, ymax), srid.strip().upper()


def set_thumbnail_from_bbox(session: Session, principal: Principal, settings: Settings,
                            drawer: ThumbnailDrawer, resource: Resource, body: Any) -> str:
    """Draw the resource over a box (a dataset in its default style, a map's layers)."""
    if resource.resource_type not in THUMBNAIL_TYPES:
        raise MethodNotAllowed(f"Thumbnails are drawn from a box for datasets and maps, not for "
                               f"a {resource.resource_type}")
    catalogue.require(session, principal, resource, perms.CHANGE_METADATA)
    bbox, crs = parse_bbox(body)
    return write_thumbnail(settings, resource, drawer.over_box(session, settings, resource, bbox, crs))


def draw_dataset_thumbnail(session: Session, settings: Settings, drawer: ThumbnailDrawer,
                           resource: Resource) -> bool:
    """Draw a published dataset's thumbnail again (the deferred thumbnail of a large layer);
    False when there is nothing to draw (the dataset was deleted in the meantime)."""
    png = drawer.dataset(session, settings, resource)
    if png is None:
        return False
    write_thumbnail(settings, resource, png)
    return True


# -- serving --------------------------------------------------------------------------------


def visible_thumbnail(session: Session, principal: Principal, settings: Settings,
                      resource_uuid: str) -> tuple[bytes, bool]:
    """The stored thumbnail of a resource the principal may view, and whether anonymous
    callers may view it too (shared caches may keep it); NotFound otherwise, so a private
    resource's thumbnail does not even reveal that it exists."""
    key = thumbnail_key(resource_uuid)
    resource = session.scalar(select(Resource).where(
        Resource.uuid == key[len("thumbnails/"):-len(".png")],
        perms.visible_to(principal, settings, check_advertised=False)))
    if resource is None:
        raise NotFound()
    public = principal.id is None or perms.can(session, _anonymous(session, settings), resource,
                                               perms.VIEW)
    data = file_store(settings).read_bytes(key)
    if data is None:
        raise NotFound()
    return data, public


def _anonymous(session: Session, settings: Settings) -> Principal:
    anonymous_id, _ = internal_group_ids(session, settings)
    return Principal(None, frozenset({anonymous_id}))
