"""Schemathesis fuzzes the OpenAPI schema: no 500s, and every response conforms to its schema.

Bounded: a fixed number of generated cases per operation (seconds here, well under a minute).
Schemathesis's positive-data-acceptance check is left out on purpose: the schema cannot state the
cross-field rules (active ≤ total parameters, nodes_per_group ≤ num_nodes with the hierarchy, a
positive total growth rate), so some schema-valid bodies are rightly rejected with 422. Invalid
data must still be rejected (negative_data_rejection stays on).
"""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

from dtsim.interfaces.api.app import create_app

schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(ui=False))
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    negative_data_rejection,
]


@schema.parametrize()
@settings(
    max_examples=80,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)
def test_api_conforms_to_its_schema(case):
    case.call_and_validate(checks=CHECKS)
