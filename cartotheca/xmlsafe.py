"""cartotheca.xmlsafe: the one way untrusted XML (ISO metadata, SLD, OWS POST bodies) is parsed.

Entities are never resolved, nothing is fetched from the network, and a document that declares
a DTD is refused outright: XXE and entity expansion ("billion laughs") need one, and none of
the formats Cartotheca reads does.
"""

from __future__ import annotations

from pathlib import Path

from lxml import etree

from cartotheca.errors import InvalidInput

MAX_XML_BYTES = 20 * 1024 * 1024


def _parser() -> etree.XMLParser:
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False,
                           dtd_validation=False, huge_tree=False, remove_comments=True)


def parse(data: bytes | str, what: str = "XML document") -> etree._Element:
    """Parse ``data`` into an lxml element; any problem is an ``InvalidInput`` naming ``what``."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    if len(data) > MAX_XML_BYTES:
        raise InvalidInput(f"{what} is larger than {MAX_XML_BYTES // (1024 * 1024)} MB")
    head = data[:4096].lower()
    if b"<!doctype" in head or b"<!entity" in data.lower():
        raise InvalidInput(f"{what} declares a DTD or entities, which are not accepted")
    try:
        root = etree.fromstring(data, parser=_parser())
    except etree.XMLSyntaxError as exc:
        raise InvalidInput(f"{what} is not well-formed XML: {exc}") from None
    tree = root.getroottree()
    if tree.docinfo.doctype or tree.docinfo.internalDTD is not None:
        raise InvalidInput(f"{what} declares a DTD, which is not accepted")
    return root


def read_file(path: Path, what: str) -> str:
    """The text of an uploaded XML file (ISO metadata, an SLD): UTF-8, within MAX_XML_BYTES."""
    if path.stat().st_size > MAX_XML_BYTES:
        raise InvalidInput(f"{what} is larger than {MAX_XML_BYTES // (1024 * 1024)} MB")
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(f"{what} must be UTF-8 encoded XML") from None
