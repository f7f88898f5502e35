"""cartotheca.ows.map_images: a map drawn as one image (its PNG/JPEG/PDF downloads, its thumbnail's layers).

One composite render of the map's layers, as a GetMap of all of them would draw it: bottom layer
first, each in its current style (the dataset's default when the style is gone) at its opacity;
hidden layers and layers whose dataset was deleted draw nothing. Downloads show only the
datasets the requester may view; the thumbnail (``ows.thumbnails``) those the map's owner may view.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from cartotheca.catalogue import links, maps
from cartotheca.catalogue.auth import Principal
from cartotheca.db.models import Resource
from cartotheca.errors import InvalidInput
from cartotheca.ows import render
from cartotheca.settings import Settings

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
