"""cartotheca.xmlsafe: the one way untrusted XML (ISO metadata, SLD, OWS POST bodies) is parsed,
and the one rule for which characters text may hold.

Entities are never resolved, nothing is fetched from the network, and a document that declares
a DTD is refused outright: XXE and entity expansion ("billion laughs") need one, and none of
the formats Cartotheca reads does.

Text a client stores must be writable into every document that may carry it later (XML
capabilities, CSW records, GML, KML) and storable in PostgreSQL: ``check_text`` refuses the
characters XML 1.0 cannot carry, not even as a character reference (the C0 controls other
than tab, newline and carriage return; lone surrogates; U+FFFE and U+FFFF), NUL among them.
Text already stored with one (written before that rule, or straight into the database) loses
them when written out: ``clean``, ``sub_element``, ``escape`` and ``quoteattr`` are what XML
writers put in documents, so one stored value can never make a document unreadable.

Readers of parsed documents find elements by local name (``local_name``, ``first_child``,
``children_named``, ``child_text``, ``text_of``): clients mix namespace versions (SLD 1.0 and
SE 1.1, GML 2 and 3.2, WCS 2.0 and 2.0.1) and the name alone is what the formats agree on.
Comments and processing instructions are never matched.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, BinaryIO
from xml.sax import saxutils

from lxml import etree

from cartotheca.errors import InvalidInput

NOT_XML_TEXT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")

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


def read_file(source: BinaryIO, size: int, what: str) -> str:
    """The text of an uploaded XML file (ISO metadata, an SLD) of ``size`` bytes, read from
    ``source`` once the size is within MAX_XML_BYTES: UTF-8."""
    if size > MAX_XML_BYTES:
        raise InvalidInput(f"{what} is larger than {MAX_XML_BYTES // (1024 * 1024)} MB")
    try:
        return source.read().decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(f"{what} must be UTF-8 encoded XML") from None


def unsafe_character(value: str) -> str | None:
    """The first character of ``value`` no XML document can carry, as ``U+XXXX``; else None."""
    found = NOT_XML_TEXT.search(value)
    return None if found is None else f"U+{ord(found.group()):04X}"


def check_text(value: Any, field: str) -> None:
    """Refuse (``InvalidInput`` naming ``field``) a string, or any string or key inside nested
    lists and mappings, holding a character ``unsafe_character`` finds."""
    if isinstance(value, str):
        bad = unsafe_character(value)
        if bad is not None:
            raise InvalidInput(f"{field or 'value'}: text may not contain control characters "
                               f"({bad}).")
    elif isinstance(value, Mapping):
        for key, item in value.items():
            where = f"{field}.{key}" if field else str(key)
            check_text(key, where)
            check_text(item, where)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            check_text(item, f"{field}[{index}]")


def clean(value: Any) -> str:
    """``value`` as text an XML document can carry: characters it cannot are dropped."""
    return NOT_XML_TEXT.sub("", value if isinstance(value, str) else str(value))


def clean_all(value: Any) -> Any:
    """``value`` with ``clean`` applied to every string in it, keys of mappings included."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, Mapping):
        return {clean_all(key): clean_all(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [clean_all(item) for item in value]
    return value


def sub_element(parent: etree._Element, tag: str, text: Any = None,
                attrs: Mapping[str, Any] | None = None) -> etree._Element:
    """``etree.SubElement`` for writers of documents that carry stored text: ``text`` and the
    attribute values go through ``clean`` (lxml refuses a whole document over one of them)."""
    node = etree.SubElement(parent, tag, {k: clean(v) for k, v in (attrs or {}).items()})
    if text is not None:
        node.text = clean(text)
    return node


def escape(value: Any) -> str:
    """``value`` as XML character data, for writers that build documents as strings."""
    return saxutils.escape(clean(value))


def quoteattr(value: Any) -> str:
    """``value`` as a quoted XML attribute value, for writers that build documents as strings."""
    return saxutils.quoteattr(clean(value))


# -- reading parsed documents by local name ------------------------------------------------------


def local_name(el: Any) -> str:
    """The tag of ``el`` without its namespace; "" for comments and processing instructions."""
    return etree.QName(el).localname if isinstance(el.tag, str) else ""


def first_child(el: Any, name: str) -> Any:
    """The first child element of ``el`` named ``name``; None if none (or ``el`` is None)."""
    if el is None:
        return None
    for item in el:
        if isinstance(item.tag, str) and etree.QName(item).localname == name:
            return item
    return None


def children_named(el: Any, *names: str) -> list[Any]:
    """The child elements of ``el`` named any of ``names``, in document order."""
    return [item for item in el if isinstance(item.tag, str) and etree.QName(item).localname in names]


def child_text(el: Any, name: str) -> str | None:
    """The stripped text of the child ``name`` ("" when it is empty); None if there is none."""
    found = first_child(el, name)
    return (found.text or "").strip() if found is not None else None


def text_of(el: Any) -> str | None:
    """All the text inside ``el``, stripped; None when there is none (or ``el`` is None)."""
    if el is None:
        return None
    value = "".join(el.itertext()).strip()
    return value or None
