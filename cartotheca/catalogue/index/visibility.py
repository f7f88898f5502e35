"""cartotheca.catalogue.index.visibility: ``permissions.visible_to`` in set algebra.

Each branch mirrors one clause of ``visible_to``, ``_moderated`` and ``_advertised`` (same
order, same cases), so a change there must be made here too; the tests compare both on random
catalogues for every kind of requester.
"""

from __future__ import annotations

from pyroaring import BitMap

from cartotheca.catalogue.auth import Principal
from cartotheca.catalogue.index.bitmaps import Bitmaps
from cartotheca.settings import Settings


def visible_set(b: Bitmaps, principal: Principal, settings: Settings, advertised: str | None) -> BitMap:
    """The ids ``principal`` may see in lists (``visible_to(..., check_advertised=True)``)."""
    shown = _advertised(b, principal, advertised)
    if principal.is_superuser:
        return shown
    owner = b.member("owner", principal.id) if principal.id is not None else None
    may_view = b.union("grant_group", principal.group_ids)
    if principal.id is not None:
        may_view |= b.member("grant_user", principal.id)
    if owner is not None:
        may_view |= owner
    result = may_view & shown
    if settings.RESOURCE_PUBLISHING or settings.ADMIN_MODERATE_UPLOADS:
        result &= _moderated(b, b.state["published"], principal, owner)
    if settings.ADMIN_MODERATE_UPLOADS:
        result &= _moderated(b, b.state["approved"], principal, owner)
    return result


def _moderated(b: Bitmaps, flag: BitMap, principal: Principal, owner: BitMap | None) -> BitMap:
    options = flag | owner if owner is not None else BitMap(flag)
    if principal.member_group_ids:
        options |= b.union("group", principal.member_group_ids)
    return options


def _advertised(b: Bitmaps, principal: Principal, advertised: str | None) -> BitMap:
    value = (advertised or "").strip().lower()
    flagged = b.state["advertised"]
    if value == "all" and principal.is_superuser:
        return BitMap(b.all)
    if value in ("true", "1"):
        return BitMap(flagged)
    if value in ("false", "0"):
        hidden = b.all - flagged
        if principal.is_superuser or principal.id is None:
            return hidden
        return hidden & b.member("owner", principal.id)
    if principal.is_superuser:
        return BitMap(b.all)
    if principal.id is None:
        return BitMap(flagged)
    return flagged | b.member("owner", principal.id)
