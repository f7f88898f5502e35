"""Settings: the defaults are valid and cheap to build."""

from __future__ import annotations

import subprocess
import sys

from cartotheca import json_schema
from cartotheca.settings import DEFAULT_EXTRA_METADATA_ITEM


def test_default_extra_metadata_item_is_a_json_schema():
    # Settings skip checking this one (see the validator); the check is made here instead.
    assert json_schema.schema_problem(DEFAULT_EXTRA_METADATA_ITEM) is None
    assert json_schema.schema_problem({"type": "no-such-type"}) is not None


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          check=True)


def test_default_settings_do_not_load_jsonschema():
    out = _run("import sys\nfrom cartotheca.settings import Settings\nSettings()\n"
               "print('jsonschema' in sys.modules)")
    assert out.stdout.strip() == "False"


def test_a_custom_schema_is_still_checked():
    out = _run("import json, os\nos.environ['CARTOTHECA_EXTRA_METADATA_SCHEMA'] = "
               "json.dumps({'dataset': {'type': 'no-such-type'}})\n"
               "from cartotheca.settings import Settings\n"
               "try:\n    Settings()\nexcept ValueError as exc:\n"
               "    print('refused', 'EXTRA_METADATA_SCHEMA' in str(exc))")
    assert out.stdout.strip() == "refused True"


def test_grammars_built_after_the_filter_parser_log_nothing():
    # pygeofilter turns lark's logger to DEBUG; jsonschema then builds 38 grammars.
    out = _run("import cartotheca.filters.parse\nimport jsonschema\n"
               "from rfc3987_syntax import is_valid_syntax\nprint(is_valid_syntax('iri', 'http://a/b'))")
    assert out.stdout.strip() == "True"
    assert "Unused" not in out.stderr
