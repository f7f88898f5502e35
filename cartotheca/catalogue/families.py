"""cartotheca.catalogue.families: the resource families registered as kinds, in one function.

``build_kinds`` is what the composition roots (the app, the CLI, the worker) call: it is the only
place that names every family, so the generic resource code never imports one.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.orm import Session

from cartotheca.catalogue import dataset_copies, documents, maps, publishing, thumbnails
from cartotheca.catalogue.kinds import CopyRequest, Kind, Kinds, ThumbnailDrawer
from cartotheca.db.models import Resource
from cartotheca.geodata.ingest import Dropped
from cartotheca.settings import Settings


def build_kinds(drawer: ThumbnailDrawer, dropped: Dropped | None = None) -> Kinds:
    """The registry with every family; ``drawer`` draws thumbnails, ``dropped`` is told when
    stored data is dropped (both the map server's)."""
    kinds = Kinds(thumbnails=drawer, dropped=dropped,
                  common=Kind(forget=thumbnails.forget_thumbnails))

    def forget_data(session: Session, settings: Settings, resources: Sequence[Resource]) -> None:
        publishing.forget_data(session, settings, [r.id for r in resources], dropped)

    kinds.register("dataset", Kind(copy=_copy_dataset, forget=forget_data))
    kinds.register("document", Kind(copy=_copy_document, forget=_forget_documents))
    kinds.register("map", Kind(copy=_copy_map))
    return kinds


def _copy_dataset(request: CopyRequest) -> None:
    """A copied dataset gets its own data (unless the copy only checks its input)."""
    if request.copy_data:
        dataset_copies.copy_dataset(request.session, request.settings, request.source, request.clone,
                                    key=request.key, on_stored=request.on_stored)


def _copy_document(request: CopyRequest) -> None:
    """A copied document gets its own file."""
    documents.copy_document(request.session, request.settings, request.source, request.clone)


def _copy_map(request: CopyRequest) -> None:
    """A copied map shows the same layers (those the copier may view)."""
    maps.copy_layers(request.session, request.principal, request.settings, request.source,
                     request.clone)


def _forget_documents(session: Session, settings: Settings, resources: Sequence[Resource]) -> None:
    documents.forget_files(session, settings, [r.id for r in resources])
