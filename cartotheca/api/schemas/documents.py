"""cartotheca.api.schemas.documents: the document extras of a record (GeoNode's DocumentSerializer)."""

from __future__ import annotations

from typing import Any

from cartotheca.db.models import Document, Resource


def download_url(site: str, resource: Resource) -> str:
    return f"{site}/documents/{resource.id}/download"


def document_extras(resource: Resource, document: Document | None, site: str) -> dict[str, Any]:
    """``name``, ``href``, ``extension``, ``mime_type``, ``doc_url`` and the download links.

    ``href`` is the remote URL of a linked document, else the inline view of the stored file;
    remote downloads are not ``ajax_safe`` (they leave this origin).
    """
    if document is None:  # a document record without a file or link (made by other means)
        return {"name": resource.name or resource.title, "href": None, "extension": None,
                "mime_type": None, "doc_url": None, "download_url": None, "download_urls": []}
    download = download_url(site, resource)
    href = document.doc_url or f"{site}/documents/{resource.id}/link"
    return {
        "name": resource.name or resource.title,
        "href": href,
        "extension": document.extension,
        "mime_type": document.mime_type,
        "doc_url": document.doc_url,
        "download_url": download,
        "download_urls": [{"url": download, "ajax_safe": document.doc_url is None}],
    }
