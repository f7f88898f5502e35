"""cartotheca.mail: plain SMTP delivery with the EMAIL_* settings (smtplib)."""

from __future__ import annotations

import smtplib
import ssl
from email.message import EmailMessage
from email.utils import formatdate, make_msgid

from cartotheca.settings import Settings


def send(settings: Settings, subject: str, body: str, recipients: list[str], *,
         html: str | None = None) -> None:
    """Send one message to ``recipients`` (each sees only themselves in To:)."""
    if not recipients:
        return
    smtp_class = smtplib.SMTP_SSL if settings.EMAIL_USE_SSL else smtplib.SMTP
    kwargs = {"context": ssl.create_default_context()} if settings.EMAIL_USE_SSL else {}
    with smtp_class(settings.EMAIL_HOST, settings.EMAIL_PORT, timeout=settings.TIMEOUT, **kwargs) as smtp:
        if settings.EMAIL_USE_TLS and not settings.EMAIL_USE_SSL:
            smtp.starttls(context=ssl.create_default_context())
        if settings.EMAIL_HOST_USER:
            smtp.login(settings.EMAIL_HOST_USER, settings.EMAIL_HOST_PASSWORD)
        for recipient in recipients:
            smtp.send_message(_message(settings, subject, body, recipient, html))


def _message(settings: Settings, subject: str, body: str, recipient: str, html: str | None) -> EmailMessage:
    message = EmailMessage()
    message["Subject"] = subject
    message["From"] = settings.DEFAULT_FROM_EMAIL
    message["To"] = recipient
    message["Date"] = formatdate(localtime=False)
    message["Message-ID"] = make_msgid(domain=settings.DEFAULT_FROM_EMAIL.rpartition("@")[2] or None)
    message.set_content(body)
    if html:
        message.add_alternative(html, subtype="html")
    return message
