"""cartotheca.catalogue.resource_files: a style (SLD) or an ISO 19115 file applied to a published
dataset without sending its data again.

These are GeoNode's upload actions ``resource_style_upload`` and ``resource_metadata_upload``:
the upload endpoint receives the file (``sld_file``/``xml_file``, or ``base_file``) with
``resource_pk``. Everything that can fail is checked while the request is answered (a 400, 403
or 404 that changes nothing); the execution then only writes what was checked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from cartotheca.catalogue import dataset_records, iso_metadata
from cartotheca.catalogue import permissions as perms
from cartotheca.catalogue.auth import Principal
from cartotheca.catalogue.datasets import get_dataset_by_id
from cartotheca.catalogue.resources import parse_id
from cartotheca.catalogue.staging import StagedPart
from cartotheca.db.base import utcnow
from cartotheca.db.models import Dataset, Resource, Style
from cartotheca.errors import InvalidInput, NotAuthenticated
from cartotheca.settings import Settings

STYLE_UPLOAD = "resource_style_upload"
METADATA_UPLOAD = "resource_metadata_upload"
# action → (the file fields looked at, in order; the permission the change needs)
ACTIONS: dict[str, tuple[tuple[str, ...], str]] = {
    STYLE_UPLOAD: (("sld_file", "base_file"), perms.CHANGE_STYLE),
    METADATA_UPLOAD: (("xml_file", "base_file"), perms.CHANGE_METADATA),
}


def is_resource_file_action(fields: Mapping[str, str]) -> bool:
    return fields.get("action") in ACTIONS


def check(session: Session, settings: Settings, principal: Principal, fields: Mapping[str, str],
          files: Mapping[str, StagedPart]) -> dict[str, Any]:
    """The inputs of the execution applying the file, once the dataset (visible to the
    requester, who holds the right) and the file (safe XML; a drawable SLD, or ISO 19115 not
    about another resource) have passed every check."""
    if principal.id is None:
        raise NotAuthenticated()
    action = fields["action"]
    names, codename = ACTIONS[action]
    raw_pk = (fields.get("resource_pk") or "").strip()
    if not raw_pk:
        raise InvalidInput(f"resource_pk is required with action {action}")
    resource, _dataset = get_dataset_by_id(session, principal, settings, parse_id(raw_pk), codename)
    name = next((n for n in names if n in files), None)
    if name is None:
        raise InvalidInput(f"Field {names[0]} is required with action {action}")
    text = files[name].read_xml(name)
    if action == STYLE_UPLOAD:
        text = dataset_records.validate_sld(text)
    else:
        iso_metadata.check_identifier(dataset_records.parse_metadata(text), resource.uuid)
    return {"resource_id": resource.id, "action": action, "file_name": files[name].name, "text": text}


def apply(session: Session, settings: Settings, principal: Principal, params: Mapping[str, Any]) -> Resource:
    """Write the checked file onto its dataset (no commit). The right is checked again: it may
    have been withdrawn since the request was answered."""
    action = params["action"]
    resource, dataset = get_dataset_by_id(session, principal, settings, int(params["resource_id"]),
                                          ACTIONS[action][1])
    if action == STYLE_UPLOAD:
        set_default_style(session, resource, dataset, params["text"])
    else:
        root = dataset_records.parse_metadata(params["text"])
        iso_metadata.check_identifier(root, resource.uuid)
        iso_metadata.apply_iso_metadata(session, resource, root)
    resource.last_updated = utcnow()
    return resource


def set_default_style(session: Session, resource: Resource, dataset: Dataset, sld_body: str) -> Style:
    """Replace the body of the style the map server draws by default (the default style, else
    the first), keeping its name so its ``sld_url`` stays the same; add one if there is none.
    The map server reads the style with every lookup and keys its built maps by the SLD text,
    so the next image is drawn in the new style."""
    style = session.scalar(select(Style).where(Style.dataset_id == dataset.resource_id)
                           .order_by(Style.is_default.desc(), Style.id).limit(1))
    if style is None:
        style = Style(dataset_id=dataset.resource_id, name=dataset.name, workspace=dataset.workspace,
                      sld_title=resource.title, sld_body=sld_body, is_default=True)
        session.add(style)
    else:
        style.sld_body = sld_body
        style.is_default = True
    session.flush()
    return style
