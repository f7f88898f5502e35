"""cartotheca.db.models.documents: what a document adds to its resource record.

A document is a ``resources`` row (resource_type ``document``) plus one ``documents`` row: either
a stored file (``file_path``) or a link to a remote one (``doc_url``), never both.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from cartotheca.db.base import Base


class Document(Base):
    __tablename__ = "documents"

    resource_id: Mapped[int] = mapped_column(
        ForeignKey("resources.id", ondelete="CASCADE"), primary_key=True
    )
    extension: Mapped[str] = mapped_column(String(16))  # lower case, without the dot
    mime_type: Mapped[str] = mapped_column(String(128))
    doc_url: Mapped[str | None] = mapped_column(String(2048))  # a remote document
    # Absolute path of the stored original (under DATA_DIR/documents/<uuid>/), as GeoNode's
    # assets keep it: the file can be found and removed from the row alone, by any process.
    file_path: Mapped[str | None] = mapped_column(String(1024))
    file_name: Mapped[str | None] = mapped_column(String(255))  # the uploaded name, for downloads
    file_size: Mapped[int | None] = mapped_column(BigInteger)
    sha256: Mapped[str | None] = mapped_column(String(64))
