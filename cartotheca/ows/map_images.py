"""cartotheca.ows.map_images: a map drawn as one image (its PNG/JPEG/PDF downloads, its thumbnail).

One composite render of the map's layers, as a GetMap of all of them would draw it: bottom layer
first, each in its current style (the dataset's default when the style is gone) at its opacity;
hidden layers and layers whose dataset was deleted draw nothing. Downloads show only the
datasets the requester may view; the thumbnail those the map's owner may view.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from sqlalchemy.orm import Session

from cartotheca.catalogue import links, maps, thumbnails
from cartotheca.catalogue.accounts import internal_group_ids
from cartotheca.catalogue.auth import InternalGroups, Principal, principal_for
from cartotheca.db.models import Resource, User
from cartotheca.errors import InvalidInput
from cartotheca.ows import render
from cartotheca.settings import Settings

log = logging.getLogger("cartotheca.maps")
IMAGE_TYPES = {"png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "pdf": "application/pdf"}


def layer_specs(session: Session, resource: Resource, principal: Principal | None = None,
                settings: Settings | None = None) -> list[render.LayerSpec]:
    specs = []
    for layer, dataset_resource, dataset in maps.drawn_layers(session, resource, principal, settings):
        try:
            sld = render.dataset_sld(dataset, layer.current_style) if layer.current_style else None
        except render.UnknownStyle:
            sld = None  # the style was removed from the dataset since the layer was saved
        specs.append(render.LayerSpec(dataset_resource, dataset, sld=sld, opacity=layer.opacity))
    return specs


def render_map(session: Session, principal: Principal, settings: Settings, resource: Resource,
               extension: str) -> tuple[bytes, str]:
    """The map as the requester may see it, over its extent, in the format of ``extension``;
    returns the bytes and their MIME type."""
    mime = IMAGE_TYPES.get(extension.lower())
    if mime is None or mime not in render.available_formats():
        raise InvalidInput(f"Map images are served as {', '.join(sorted(IMAGE_TYPES))}")
    box, srs = links.native_view(resource)
    width, height = links.image_size(box)
    specs = layer_specs(session, resource, principal, settings)
    return render.render_image(settings, specs, box, srs, width, height, image_format=mime), mime


def fit_box(box: tuple[float, float, float, float], width: int, height: int
            ) -> tuple[float, float, float, float]:
    """``box`` widened (about its centre) to the image's aspect ratio."""
    minx, miny, maxx, maxy = box
    dx, dy = maxx - minx, maxy - miny
    if dx / dy < width / height:
        dx = dy * width / height
    else:
        dy = dx * height / width
    cx, cy = (minx + maxx) / 2, (miny + maxy) / 2
    return cx - dx / 2, cy - dy / 2, cx + dx / 2, cy + dy / 2


def draw_thumbnail(session: Session, settings: Settings, resource: Resource) -> bool:
    """Store a new thumbnail of the map's layers; False when there is nothing to draw or the
    map keeps a thumbnail URL a client set (an external image)."""
    if resource.thumbnail_url and not thumbnails.is_own_url(settings, resource.thumbnail_url,
                                                             resource.uuid):
        return False
    specs = layer_specs(session, resource, _owner(session, settings, resource), settings)
    if not specs:
        return False
    width, height = settings.THUMBNAIL_SIZE[:2]
    box, srs = links.native_view(resource)
    png = render.render_image(settings, specs, fit_box(box, width, height), srs, width, height)
    thumbnails.write_thumbnail(settings, resource, png)
    return True


def _owner(session: Session, settings: Settings, resource: Resource) -> Principal:
    """The map's owner as a requester: a thumbnail (seen by all who may view the map) shows
    the layers its owner may view, never a dataset that became private to someone else."""
    groups = InternalGroups(*internal_group_ids(session, settings))
    return principal_for(session, session.get(User, resource.owner_id), groups, "thumbnail")


def redraw_thumbnails(session: Session, settings: Settings, map_ids: Iterable[int]) -> None:
    """Redraw the thumbnails of maps whose layers changed, once their change is committed. A
    thumbnail is a convenience: failing to draw one is logged and never undoes the save."""
    for map_id in sorted(map_ids):
        resource = session.get(Resource, map_id)
        if resource is None:
            continue
        try:
            if draw_thumbnail(session, settings, resource):
                session.commit()
        except Exception:  # noqa: BLE001 - any failure of a renderer or store must not fail the save
            session.rollback()
            log.warning("thumbnail of map %s could not be drawn", map_id, exc_info=True)
