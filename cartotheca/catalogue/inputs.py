"""cartotheca.catalogue.inputs: the error the typed input models of the catalogue raise.

Bodies are checked by pydantic models (group profiles, harvesters, OAuth applications,
permission specs); a refused value raises ``invalid(message)``, which pydantic reports as a
``ValidationError`` and the REST error map answers as GeoNode's 400 with that message.
"""

from __future__ import annotations

from pydantic_core import PydanticCustomError


def invalid(message: str) -> PydanticCustomError:
    """A validation error whose message is shown to the client as written (no templating:
    GeoNode's messages contain braces)."""
    return PydanticCustomError("invalid", "{message}", {"message": message})
