"""cartotheca.catalogue.datasets: finding datasets by name for the map server and downloads.

Every OWS request and download resolves its layer names here, so the same permission rules
apply as in the API: ``view`` to see and render, ``download`` to get features and coverages.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from cartotheca.catalogue import permissions as perms
from cartotheca.catalogue.auth import Principal
from cartotheca.db.models import Dataset, Resource
from cartotheca.errors import NotFound, PermissionDenied
from cartotheca.settings import Settings


def split_alternate(name: str, settings: Settings) -> tuple[str, str]:
    """``workspace:name`` → (workspace, name); a bare name takes the default workspace."""
    workspace, sep, layer = name.strip().partition(":")
    if not sep:
        return settings.DEFAULT_WORKSPACE, workspace
    return workspace, layer


def visible_datasets(session: Session, principal: Principal, settings: Settings,
                     names: list[str] | None = None) -> list[tuple[Resource, Dataset]]:
    """Datasets the principal may view (published, approved as the catalogue rules say),
    ordered by title; ``names`` (alternates or bare names) restricts the set."""
    stmt = (
        select(Resource, Dataset)
        .join(Dataset, Dataset.resource_id == Resource.id)
        .where(perms.visible_to(principal, settings, check_advertised=False))
        .where(Resource.resource_type == "dataset")
        .order_by(Resource.title, Resource.id)
    )
    if names is not None:
        pairs = [split_alternate(n, settings) for n in names]
        if not pairs:
            return []
        stmt = stmt.where(Dataset.name.in_({layer for _, layer in pairs}))
        rows = [(r, d) for r, d in session.execute(stmt).all() if (d.workspace, d.name) in set(pairs)]
        return rows
    return [(r, d) for r, d in session.execute(stmt).all()]


def get_dataset(session: Session, principal: Principal, settings: Settings, name: str,
                codename: str = perms.VIEW) -> tuple[Resource, Dataset]:
    """The dataset called ``name`` if the principal may view it, else ``NotFound``;
    ``PermissionDenied`` when visible but ``codename`` (e.g. download) is not held."""
    workspace, layer = split_alternate(name, settings)
    row = session.execute(
        select(Resource, Dataset)
        .join(Dataset, Dataset.resource_id == Resource.id)
        .where(Dataset.workspace == workspace, Dataset.name == layer)
        .where(perms.visible_to(principal, settings, check_advertised=False))
    ).first()
    if row is None:
        raise NotFound(f"No dataset named {name}")
    resource, dataset = row
    if codename != perms.VIEW and not perms.can(session, principal, resource, codename):
        raise PermissionDenied(f"You do not have permission to {codename.split('_')[0]} {name}")
    return resource, dataset


def get_dataset_by_id(session: Session, principal: Principal, settings: Settings, resource_id: int,
                      codename: str = perms.VIEW) -> tuple[Resource, Dataset]:
    row = session.execute(
        select(Resource, Dataset)
        .join(Dataset, Dataset.resource_id == Resource.id)
        .where(Resource.id == resource_id)
        .where(perms.visible_to(principal, settings, check_advertised=False))
    ).first()
    if row is None:
        raise NotFound()
    resource, dataset = row
    if codename != perms.VIEW and not perms.can(session, principal, resource, codename):
        raise PermissionDenied()
    return resource, dataset
