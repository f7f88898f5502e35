"""The typed permission specs: levels and ids checked, messages naming the key."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from cartotheca.catalogue.permission_specs import CompactSpec, NamedSpec


def first_message(exc: ValidationError) -> str:
    return exc.errors()[0]["msg"]


def test_permission_specs():
    compact = CompactSpec.model_validate({"users": [{"id": "-1", "permissions": "view"}],
                                          "groups": [{"id": 2, "permissions": "edit"}], "uuid": "u"})
    assert compact.users == [(-1, "view")] and compact.groups == [(2, "edit")]
    for body, message in (
        ({"nosuch": []}, "Unknown key in permission spec: nosuch"),
        ({"users": [{"id": 1, "permissions": "superpower"}]}, "users: unknown permission level"),
        ({"groups": [{"id": True, "permissions": "view"}]}, "groups: id must be an integer"),
    ):
        with pytest.raises(ValidationError) as caught:
            CompactSpec.model_validate(body)
        assert first_message(caught.value).startswith(message)
    with pytest.raises(ValidationError) as caught:
        NamedSpec.model_validate({"users": {"ana": ["fly"]}})
    assert first_message(caught.value) == "users.ana: unknown permission fly"
