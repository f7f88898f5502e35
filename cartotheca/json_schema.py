"""cartotheca.json_schema: JSON Schema checks, with the jsonschema library loaded on first use.

Importing jsonschema builds the RFC 3987 grammar of its format checker, about 1.5 s on a
2-core machine. Most processes never check a schema (the CLI, workers, servers without
``EXTRA_METADATA_SCHEMA``), so this is the one module that imports the library, and it does so
the first time a schema is used rather than when the process starts.
"""

from __future__ import annotations

from typing import Any


def validator(schema: dict[str, Any]) -> Any:
    """A Draft 2020-12 validator of ``schema`` (``iter_errors`` lists what an instance breaks)."""
    from jsonschema import Draft202012Validator  # noqa: PLC0415  (see the module docstring)

    return Draft202012Validator(schema)


def schema_problem(schema: dict[str, Any]) -> str | None:
    """Why ``schema`` is not a valid Draft 2020-12 JSON Schema, or None when it is."""
    if not schema:
        return None  # {} is the schema that accepts everything; no need to load the library
    from jsonschema import Draft202012Validator  # noqa: PLC0415  (see the module docstring)
    from jsonschema.exceptions import SchemaError  # noqa: PLC0415

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return str(exc.message)
    return None
