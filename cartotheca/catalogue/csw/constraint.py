"""cartotheca.catalogue.csw.constraint: a CSW constraint as pycsw hands it → its Filter element.

pycsw parses and checks every constraint (FILTER, CQL_TEXT, the ``q``/``bbox`` parameters of
CSW 3) into an OGC Filter, and also renders it as SQL text of its own. That text is not run
here: its spatial tests call functions the catalogue database does not have (it keeps no
PostGIS), and it pastes some client values (``ogc:Distance``, GML coordinates) into the SQL.
pycsw gives the repository the filter it parsed only in a dictionary form
(``constraint["_dict"]``); the element is rebuilt from it here, read by ``filters.parse`` and
compiled by ``filters.columns`` over the record columns, with every value bound.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import xmltodict
from lxml import etree

from cartotheca import xmlsafe


def filter_element(parsed: Mapping[str, Any], namespaces: Mapping[str, str]) -> etree._Element:
    """The Filter element back from pycsw's dictionary form (``constraint["_dict"]``)."""
    ((root, body),) = parsed.items()
    body = dict(body or {})
    declared = dict(body.get("@xmlns") or {})
    body["@xmlns"] = {**namespaces, **declared}
    text = xmltodict.unparse({root: body}, full_document=False)
    return xmlsafe.parse(text, "Filter constraint")
