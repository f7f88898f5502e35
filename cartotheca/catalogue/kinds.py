"""cartotheca.catalogue.kinds: what each resource type adds to the generic resource operations.

The generic resource code (copy, delete) knows no family: a ``Kind`` holds the hooks one resource
type adds (a copied document gets its own file, a deleted dataset's data is dropped), and
``Kinds`` looks them up by type. The families are registered at the composition root
(``catalogue.families.build_kinds``, called by the app, the CLI and the worker), together with the
two collaborators from the map server that the catalogue does not import: the thumbnail drawer
and the listener told when stored data is dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from sqlalchemy.orm import Session

from cartotheca.catalogue.auth import Principal
from cartotheca.db.models import Resource
from cartotheca.geodata.ingest import Dropped
from cartotheca.settings import Settings

OnStored = Callable[[Callable[[], None]], None]


class ThumbnailDrawer(Protocol):
    """Draws thumbnails (the map server's ``ows.thumbnails.MapThumbnails``), THUMBNAIL_SIZE."""

    def dataset(self, session: Session, settings: Settings, resource: Resource) -> bytes | None:
        """A dataset over its extent; None when it has no data."""
        ...

    def over_box(self, session: Session, settings: Settings, resource: Resource,
                 bbox: tuple[float, float, float, float], crs: str) -> bytes:
        """A dataset or a map over ``bbox``; ``InvalidInput`` when there is nothing to draw."""
        ...


@dataclass(frozen=True)
class CopyRequest:
    """One copy as the family hooks see it: ``clone`` is the new resource, already flushed."""

    session: Session
    principal: Principal
    settings: Settings
    source: Resource
    clone: Resource
    copy_data: bool = True  # false: a trial run that only checks the input
    key: str | None = None  # the execution id: names a retry repeats
    on_stored: OnStored | None = None  # receives the undo action of each piece of stored data


CopyHook = Callable[[CopyRequest], None]
# Resources of the kind are about to be deleted in the session's transaction: what they stored
# is to go once it commits.
ForgetHook = Callable[[Session, Settings, Sequence[Resource]], None]


@dataclass(frozen=True)
class Kind:
    copy: CopyHook | None = None
    forget: ForgetHook | None = None


NO_HOOKS = Kind()


@dataclass
class Kinds:
    """The registry: per resource type its hooks; ``common`` runs for resources of every type."""

    thumbnails: ThumbnailDrawer
    dropped: Dropped | None = None
    common: Kind = NO_HOOKS
    by_type: dict[str, Kind] = field(default_factory=dict)

    def register(self, resource_type: str, kind: Kind) -> None:
        self.by_type[resource_type] = kind

    def of(self, resource_type: str) -> Kind:
        return self.by_type.get(resource_type, NO_HOOKS)

    def copy(self, request: CopyRequest) -> None:
        hook = self.of(request.source.resource_type).copy
        if hook is not None:
            hook(request)

    def forget(self, session: Session, settings: Settings, resources: Sequence[Resource]) -> None:
        """Each kind's forget hook with its own resources (in the order given), then the common one."""
        grouped: dict[str, list[Resource]] = {}
        for resource in resources:
            grouped.setdefault(resource.resource_type, []).append(resource)
        for resource_type, group in grouped.items():
            hook = self.of(resource_type).forget
            if hook is not None:
                hook(session, settings, group)
        if self.common.forget is not None:
            self.common.forget(session, settings, resources)
