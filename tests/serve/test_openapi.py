"""Property-based contract test: schemathesis generates requests from /openapi.json.

Every generated request, valid or not, must get a documented status (no 5xx)
and a body matching the documented schema; schema-valid input must be accepted
and schema-invalid input rejected. Uses schemathesis's Python API against the
ASGI app (its pytest plugin does not support this pytest version).
"""

from __future__ import annotations

import os

import pytest

schemathesis = pytest.importorskip("schemathesis", reason="schemathesis is not installed")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from schemathesis import GenerationMode  # noqa: E402


@pytest.mark.slow
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_api_honours_its_openapi_contract(app, mode):
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    operations = [r.ok() for r in schema.get_all_operations()]
    assert {op.path for op in operations} >= {"/search", "/moves", "/health", "/metrics", "/info"}
    seen: set[str] = set()

    @given(case=schema.as_strategy(generation_mode=mode))
    @settings(
        max_examples=int(os.environ.get("RATIO_SCHEMA_EXAMPLES", "60")),
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    def check(case):
        seen.add(f"{case.method} {case.path}")
        case.call_and_validate()

    check()
    assert {"POST /search", "POST /moves"} <= seen
