"""cartotheca.catalogue.linked_resources: links between resources, in both directions.

A resource lists what it links to (``linked_to``) and what links to it (``linked_by``), each
side limited to the resources the requester may view: the other end of a link to a private
resource is simply absent. Users add and remove links from a resource they may change, to
resources they may view; the service adds ``internal`` links itself (a map to its datasets).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from cartotheca.catalogue import permissions as perms
from cartotheca.catalogue import resources as catalogue
from cartotheca.catalogue.auth import Principal
from cartotheca.db.models import LinkedResource, Resource
from cartotheca.errors import InvalidInput
from cartotheca.settings import Settings

LINK_TYPES = ("linked_to", "linked_by")
MAX_TARGETS = 1000


@dataclass
class Linked:
    """Both sides of a resource's links: (link, the resource at the other end)."""

    linked_to: list[tuple[LinkedResource, Resource]] | None = None
    linked_by: list[tuple[LinkedResource, Resource]] | None = None
    warnings: dict[str, str] = field(default_factory=dict)


def linked(session: Session, principal: Principal, settings: Settings, resource: Resource,
           params: Mapping[str, list[str]]) -> Linked:
    """The links of ``resource`` the requester may see; ``resource_type=a,b`` and
    ``link_type=linked_to|linked_by`` narrow them (GeoNode's parameters)."""
    types = [t.strip() for raw in params.get("resource_type", []) for t in raw.split(",") if t.strip()]
    link_type = (params.get("link_type") or [""])[0].strip()
    if link_type and link_type not in LINK_TYPES:
        raise InvalidInput(f"link_type: expected one of {', '.join(LINK_TYPES)}")
    out = Linked()
    if "page" in params or "page_size" in params:
        out.warnings["PAGINATION"] = "Pagination is not supported on this call"
    if link_type in ("", "linked_to"):
        out.linked_to = _side(session, principal, settings, resource, LinkedResource.source_id,
                              LinkedResource.target_id, types)
    if link_type in ("", "linked_by"):
        out.linked_by = _side(session, principal, settings, resource, LinkedResource.target_id,
                              LinkedResource.source_id, types)
    return out


def _side(session: Session, principal: Principal, settings: Settings, resource: Resource,
          this_end, other_end, types: Sequence[str]) -> list[tuple[LinkedResource, Resource]]:
    stmt = (select(LinkedResource, Resource).join(Resource, Resource.id == other_end)
            .where(this_end == resource.id,
                   perms.visible_to(principal, settings, check_advertised=False))
            .order_by(Resource.id.desc()))
    if types:
        stmt = stmt.where(Resource.resource_type.in_(types))
    return [(link, other) for link, other in session.execute(stmt)]


@dataclass
class Outcome:
    success: list[Any] = field(default_factory=list)
    error: list[Any] = field(default_factory=list)


def _targets(body: Any) -> list[Any]:
    targets = body.get("target") if isinstance(body, Mapping) else None
    if not isinstance(targets, list) or not targets:
        raise InvalidInput("Payload is not valid: expected {\"target\": [<resource ids>]}")
    if len(targets) > MAX_TARGETS:
        raise InvalidInput(f"At most {MAX_TARGETS} targets at once")
    unique: dict[str, Any] = {}
    for target in targets:
        unique.setdefault(repr(target), target)
    return list(unique.values())


def _as_id(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def change_links(session: Session, principal: Principal, settings: Settings, resource: Resource,
                 body: Any, *, remove: bool) -> Outcome:
    """POST (add) or DELETE (remove) the links from ``resource`` to ``{"target": [ids]}``.
    Each id succeeds or fails on its own (GeoNode's answer lists both); a target the requester
    may not view fails exactly like a missing one."""
    catalogue.require(session, principal, resource, perms.CHANGE)
    outcome = Outcome()
    for raw in _targets(body):
        target_id = _as_id(raw)
        if target_id is None or target_id == resource.id or target_id > 2**63 - 1:
            outcome.error.append(raw)
            continue
        done = (_unlink(session, resource.id, target_id) if remove
                else _link(session, principal, settings, resource.id, target_id))
        (outcome.success if done else outcome.error).append(raw)
    session.flush()
    return outcome


def _link(session: Session, principal: Principal, settings: Settings, source_id: int,
          target_id: int) -> bool:
    visible = session.scalar(select(Resource.id).where(
        Resource.id == target_id, perms.visible_to(principal, settings, check_advertised=False)))
    if visible is None:
        return False
    exists = session.scalar(select(LinkedResource.id).where(
        LinkedResource.source_id == source_id, LinkedResource.target_id == target_id))
    if exists is not None:
        return False
    session.add(LinkedResource(source_id=source_id, target_id=target_id, internal=False))
    return True


def _unlink(session: Session, source_id: int, target_id: int) -> bool:
    result = session.execute(delete(LinkedResource).where(
        LinkedResource.source_id == source_id, LinkedResource.target_id == target_id))
    return bool(result.rowcount)


def set_internal_links(session: Session, source_id: int, target_ids: Iterable[int]) -> None:
    """Make ``source``'s internal links exactly ``target_ids`` (a map's datasets); links users
    made are kept, and one to a target already linked by hand is not duplicated."""
    wanted = set(target_ids) - {source_id}
    current = {target: (link_id, internal) for link_id, target, internal in session.execute(
        select(LinkedResource.id, LinkedResource.target_id, LinkedResource.internal)
        .where(LinkedResource.source_id == source_id))}
    stale = [link_id for target, (link_id, internal) in current.items()
             if internal and target not in wanted]
    if stale:
        session.execute(delete(LinkedResource).where(LinkedResource.id.in_(stale)))
    for target in sorted(wanted - set(current)):
        session.add(LinkedResource(source_id=source_id, target_id=target, internal=True))
    session.flush()
