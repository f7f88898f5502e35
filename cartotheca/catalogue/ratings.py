"""cartotheca.catalogue.ratings: users rate resources from 1 to 5, once each.

A second rating by the same user replaces the first. The resource's own ``rating`` column holds
the rounded average, so lists and sorting read it without a join (GeoNode keeps an integer there
too); the exact average is in the ratings answer.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from cartotheca.catalogue.auth import Principal
from cartotheca.db.base import utcnow
from cartotheca.db.models import Rating, Resource
from cartotheca.errors import InvalidInput, NotAuthenticated


def summary(session: Session, principal: Principal, resource: Resource) -> dict[str, Any]:
    """``{"rating": <the requester's own, 0 if none>, "overall_rating": <average, 0 if none>}``."""
    average, _count = session.execute(
        select(func.avg(Rating.rating), func.count()).where(Rating.resource_id == resource.id)).one()
    own = 0
    if principal.id is not None:
        own = session.scalar(select(Rating.rating).where(
            Rating.resource_id == resource.id, Rating.user_id == principal.id)) or 0
    return {"rating": own, "overall_rating": round(float(average), 2) if average is not None else 0}


def parse_rating(body: Any) -> int:
    value = body.get("rating") if isinstance(body, dict) else body
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 5:
        raise InvalidInput("rating: expected an integer from 1 to 5")
    return value


def rate(session: Session, principal: Principal, resource: Resource, body: Any) -> dict[str, Any]:
    """Record the requester's rating (anyone who may view the resource may rate it)."""
    if principal.id is None:
        raise NotAuthenticated()
    value = parse_rating(body)
    changed = session.execute(update(Rating).where(
        Rating.resource_id == resource.id, Rating.user_id == principal.id,
    ).values(rating=value, updated=utcnow())).rowcount
    if not changed:
        try:
            with session.begin_nested():
                session.add(Rating(resource_id=resource.id, user_id=principal.id, rating=value))
        except IntegrityError:
            # The same user's other request won the race: this one is then an update.
            session.execute(update(Rating).where(
                Rating.resource_id == resource.id, Rating.user_id == principal.id,
            ).values(rating=value, updated=utcnow()))
    average = session.scalar(select(func.avg(Rating.rating)).where(Rating.resource_id == resource.id))
    # A rating is not an edit of the resource: its last_updated stays as it was.
    session.execute(update(Resource).where(Resource.id == resource.id).values(
        rating=int(float(average) + 0.5) if average is not None else 0,
        last_updated=Resource.last_updated))
    return summary(session, principal, resource)
