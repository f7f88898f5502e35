"""cartotheca.ows.thumbnails: the one place a dataset's or a map's thumbnail is drawn.

A dataset is drawn in its default style over its extent (or a box a client chose); a large layer
draws an even sample of its features. A map is drawn as one composite render of its layers, as
its owner may see them. The catalogue stores what is drawn here (``catalogue.thumbnails``) but
never imports this module: ``MapThumbnails`` is handed to it at the composition root.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

import pyproj
from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from cartotheca.catalogue import links, thumbnails
from cartotheca.catalogue.accounts import internal_group_ids
from cartotheca.catalogue.auth import InternalGroups, Principal, principal_for
from cartotheca.db.models import Dataset, Resource, User
from cartotheca.errors import InvalidInput
from cartotheca.ows import render
from cartotheca.ows.map_images import layer_specs
from cartotheca.settings import Settings

log = logging.getLogger("cartotheca.maps")
# A thumbnail of a larger layer draws an even sample of this many features: it shows where the
# data is and what it looks like at a fraction of the cost of drawing a million features.
THUMBNAIL_FEATURES = 5_000
DATASET_MARGIN = 0.05  # a dataset's extent is widened by this share on each side


class MapThumbnails:
    """The thumbnail drawer the catalogue is given (``catalogue.kinds.ThumbnailDrawer``)."""

    def dataset(self, session: Session, settings: Settings, resource: Resource) -> bytes | None:
        """The dataset over its extent, THUMBNAIL_SIZE; None when it has no data (deleted)."""
        dataset = _dataset(session, resource)
        if dataset is None:
            return None
        width, height = settings.THUMBNAIL_SIZE[:2]
        return dataset_png(settings, resource, dataset, width, height)

    def over_box(self, session: Session, settings: Settings, resource: Resource,
                 bbox: tuple[float, float, float, float], crs: str) -> bytes:
        """A dataset or a map over ``bbox`` (in ``crs``), THUMBNAIL_SIZE; ``InvalidInput``
        when there is nothing to draw."""
        width, height = settings.THUMBNAIL_SIZE[:2]
        if resource.resource_type == "map":
            specs = layer_specs(session, resource)  # each layer in its style, opacity and order
            if not specs:
                raise InvalidInput("There is nothing to draw: the map has no layers")
            return render.render_image(settings, specs, bbox, crs, width, height)
        dataset = _dataset(session, resource) if resource.resource_type == "dataset" else None
        if dataset is None:
            raise InvalidInput("There is nothing to draw: the dataset has no data")
        return dataset_png(settings, resource, dataset, width, height, bbox=bbox, crs=crs)


def _dataset(session: Session, resource: Resource) -> Dataset | None:
    return session.scalar(select(Dataset).where(Dataset.resource_id == resource.id)
                          .options(selectinload(Dataset.styles)))


# -- datasets -------------------------------------------------------------------------------


def dataset_png(settings: Settings, resource: Any, dataset: Any, width: int, height: int,
                bbox: tuple | None = None, crs: str | None = None) -> bytes:
    """A PNG of the dataset in its default style, in Web Mercator over its extent unless
    ``bbox``/``crs`` say otherwise; the box is widened to the image's shape."""
    if bbox is None:
        bbox, crs = _default_extent(resource, dataset)
    crs = crs or "EPSG:3857"
    box = fit_box(bbox, width, height, margin=DATASET_MARGIN)
    count = getattr(dataset, "feature_count", None) or 0
    sample = -(-count // THUMBNAIL_FEATURES) if dataset.storage != "cog" and count > THUMBNAIL_FEATURES else 1
    return render.render_image(settings, [render.LayerSpec(resource, dataset, sample=sample)], box,
                               crs, width, height)


def _default_extent(resource: Any, dataset: Any) -> tuple[tuple, str]:
    if resource.ll_minx is not None:
        to_merc = _to_mercator()
        miny, maxy = max(resource.ll_miny, -85.0), min(resource.ll_maxy, 85.0)
        x0, y0 = to_merc.transform(resource.ll_minx, miny)
        x1, y1 = to_merc.transform(resource.ll_maxx, maxy)
        return (x0, y0, x1, y1), "EPSG:3857"
    if resource.bbox_x0 is not None:
        srs = render.dataset_srs(dataset)
        return (resource.bbox_x0, resource.bbox_y0, resource.bbox_x1, resource.bbox_y1), \
            srs.upper() if srs.startswith("epsg:") else "EPSG:4326"
    return (-180.0, -85.0, 180.0, 85.0), "EPSG:4326"


@lru_cache(maxsize=1)
def _to_mercator() -> pyproj.Transformer:
    return pyproj.Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True)


def fit_box(bbox: tuple, width: int, height: int, margin: float = 0.0) -> tuple[float, float, float, float]:
    """``bbox`` widened by ``margin`` on each side, then about its centre to the image's shape."""
    minx, miny, maxx, maxy = (float(v) for v in bbox)
    w, h = max(maxx - minx, 1e-9), max(maxy - miny, 1e-9)
    w, h = w * (1 + 2 * margin), h * (1 + 2 * margin)
    if w / h < width / height:
        w = h * width / height
    else:
        h = w * height / width
    cx, cy = (minx + maxx) / 2, (miny + maxy) / 2
    return cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2


# -- maps -----------------------------------------------------------------------------------


def draw_map_thumbnail(session: Session, settings: Settings, resource: Resource) -> bool:
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


def redraw_map_thumbnails(session: Session, settings: Settings, map_ids: Iterable[int]) -> None:
    """Redraw the thumbnails of maps whose layers changed, once their change is committed. A
    thumbnail is a convenience: failing to draw one is logged and never undoes the save."""
    for map_id in sorted(map_ids):
        resource = session.get(Resource, map_id)
        if resource is None:
            continue
        try:
            if draw_map_thumbnail(session, settings, resource):
                session.commit()
        except Exception:  # noqa: BLE001 - any failure of a renderer or store must not fail the save
            session.rollback()
            log.warning("thumbnail of map %s could not be drawn", map_id, exc_info=True)
