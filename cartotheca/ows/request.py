"""cartotheca.ows.request: one OWS request, whatever the service, as the handlers see it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from cartotheca.catalogue.auth import Principal
from cartotheca.errors import OWSException
from cartotheca.settings import Settings


@dataclass
class OWSRequest:
    """KVP parameters (keys upper-cased), or an XML body for POST requests."""

    params: dict[str, str]
    principal: Principal
    session: Session
    settings: Settings
    service_url: str  # absolute public URL of the endpoint, advertised in capabilities
    method: str = "GET"
    body: bytes | None = None
    xml: Any = None  # parsed POST body (lxml element), when there is one
    extra: dict[str, Any] = field(default_factory=dict)

    def get(self, name: str, default: str | None = None) -> str | None:
        value = self.params.get(name.upper())
        return default if value is None or value == "" else value

    def require(self, name: str, version: str | None = None) -> str:
        value = self.get(name)
        if value is None:
            raise OWSException("MissingParameterValue", f"Parameter {name.upper()} is required",
                               locator=name.lower(), version=version)
        return value

    @property
    def service(self) -> str:
        return (self.get("SERVICE") or "").upper()

    @property
    def version(self) -> str | None:
        return self.get("VERSION")

    @property
    def operation(self) -> str:
        return self.get("REQUEST") or ""
