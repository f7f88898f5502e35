"""cartotheca.catalogue.event_messages: what a notice says, as an e-mail and as a chat webhook body."""

from __future__ import annotations

from typing import Any

from cartotheca import siteurl
from cartotheca.db.models import Notice
from cartotheca.settings import Settings

# kind → (subject, verb of "<actor> <verb> the <type> "<title>"")
RESOURCE_TEXTS = {
    "document_uploaded": ("Document uploaded", "uploaded"),
    "dataset_published": ("Dataset published", "published"),
    "metadata_updated": ("Metadata updated", "updated the metadata of"),
    "permissions_changed": ("Permissions changed", "changed the permissions of"),
    "resource_deleted": ("Resource deleted", "deleted"),
}


def site_url(settings: Settings, notice: Notice) -> str:
    """The site URL a message links to: SITEURL when set, else the base of the request that
    recorded the notice (work without a request records none: SITEURL's default)."""
    if siteurl.is_configured(settings):
        return settings.SITEURL
    return notice.payload.get("site") or settings.SITEURL


def resource_summary(settings: Settings, notice: Notice) -> dict[str, Any] | None:
    resource = notice.payload.get("resource")
    if resource is None:
        return None
    summary = {k: resource.get(k) for k in ("id", "uuid", "title", "resource_type")}
    summary["detail_url"] = site_url(settings, notice).rstrip("/") + resource["detail_path"]
    return summary


def _sentence(settings: Settings, notice: Notice) -> tuple[str, str]:
    """(subject, one-line text) of a resource notice."""
    subject, verb = RESOURCE_TEXTS[notice.kind]
    resource = notice.payload["resource"]
    actor = notice.payload.get("actor") or "Someone"
    title = resource.get("title") or ""
    return (f"{subject}: {title}",
            f'{actor} {verb} the {resource.get("resource_type")} "{title}".')


def email_message(settings: Settings, notice: Notice) -> tuple[str, str]:
    """(subject, plain-text body) of the e-mail for ``notice``."""
    site = site_url(settings, notice)
    user = notice.payload.get("user") or {}
    if notice.kind == "account_requested":
        return (f"New account request: {user.get('username')}",
                f"{user.get('username')} ({user.get('email') or 'no e-mail'}) asked for an account "
                f"on {site}.\n\nThe account stays inactive until a staff member approves it by "
                f"making it active:\n{site}api/v2/users/{user.get('id')}\n")
    if notice.kind == "account_approved":
        return ("Your account has been approved",
                f"Hello {user.get('username')},\n\nyour account on {site} has been approved. "
                f"You can now log in as {user.get('username')}.\n")
    subject, text = _sentence(settings, notice)
    body = text + "\n"
    if notice.kind != "resource_deleted":
        body += f"\n{resource_summary(settings, notice)['detail_url']}\n"
    return subject, body


def chat_payload(settings: Settings, notice: Notice) -> dict[str, Any]:
    """The JSON body posted to each CHAT_WEBHOOK_URLS channel.

    ``text`` is what chat services that only read one field (Slack, Mattermost) show.
    """
    _, text = _sentence(settings, notice)
    return {
        "event": notice.kind,
        "text": text,
        "resource": resource_summary(settings, notice),
        "actor": notice.payload.get("actor"),
        "timestamp": notice.created.isoformat(timespec="seconds") + "Z",
    }
