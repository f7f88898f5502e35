"""cartotheca.db.models.permissions: per-resource grants of permission names to users and groups."""

from __future__ import annotations

from sqlalchemy import CheckConstraint, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from cartotheca.db.base import Base, intpk


class ResourcePermission(Base):
    """One permission name granted on one resource to one user or one group.

    Rows are per codename (not per level) so that the visibility test is one indexed probe:
    ``EXISTS (codename='view_resourcebase' AND resource_id=? AND (user_id=? OR group_id IN ...))``.
    """

    __tablename__ = "resource_permissions"
    __table_args__ = (
        CheckConstraint("(user_id IS NULL) <> (group_id IS NULL)", name="one_principal"),
        Index("ix_resource_permissions_resource", "resource_id", "codename"),
        Index("ix_resource_permissions_user", "user_id", "codename", "resource_id"),
        Index("ix_resource_permissions_group", "group_id", "codename", "resource_id"),
    )

    id: Mapped[intpk]
    resource_id: Mapped[int] = mapped_column(ForeignKey("resources.id", ondelete="CASCADE"))
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    group_id: Mapped[int | None] = mapped_column(ForeignKey("groups.id", ondelete="CASCADE"))
    codename: Mapped[str] = mapped_column(String(64))
