"""cartotheca.ows.wfs.versions: which WFS version (2.0.0, 1.1.0, 1.0.0) a request speaks."""

from __future__ import annotations

from cartotheca.errors import OWSException
from cartotheca.ows.request import OWSRequest

VERSIONS = ("2.0.0", "1.1.0", "1.0.0")


def _canonical(version: str) -> str | None:
    text = version.strip()
    for known in VERSIONS:
        if text == known or known.startswith(text + ".") or text.startswith(known):
            return known
    return None


def negotiate(req: OWSRequest) -> str:
    """GetCapabilities: the first of ACCEPTVERSIONS we speak, else VERSION, else the highest."""
    accept = req.get("ACCEPTVERSIONS")
    if accept:
        for candidate in accept.split(","):
            known = _canonical(candidate)
            if known:
                return known
        raise OWSException("VersionNegotiationFailed", f"None of {accept} is supported",
                           locator="AcceptVersions")
    if req.version:
        return _canonical(req.version) or VERSIONS[0]
    return VERSIONS[0]


def requested_version(req: OWSRequest) -> str:
    if not req.version:
        return VERSIONS[0]
    known = _canonical(req.version)
    if known is None:
        raise OWSException("InvalidParameterValue", f"Unsupported WFS version {req.version}",
                           locator="version")
    return known
