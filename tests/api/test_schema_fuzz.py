"""Schema-driven fuzzing (schemathesis) of the served API, through a real `codemem serve`.

The served OpenAPI schema names every operation and parameter; the request bodies are
decoded by the handlers themselves (strict msgspec, see api/bodies.py), so the schema
leaves them open and this test fills them in from the very Structs that decode them.
Schemathesis then generates valid and invalid bodies, paths and parameters for each
operation. Every answer must be below 500, and every rejection a 4xx with a reason.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from api.app import create_app
from api.memoryarena import AddChunkBody, InitializeBody, WrapBody
from codemem.config import Settings
from codemem.contract.types import AddRequest, SearchRequest
from tests.server import Server

BODIES: dict[tuple[str, str], type[msgspec.Struct]] = {
    ("/add", "post"): AddRequest,
    ("/search", "post"): SearchRequest,
    ("/memory/initialize", "post"): InitializeBody,
    ("/memory/add", "post"): AddChunkBody,
    ("/memory/wrap_user_prompt", "post"): WrapBody,
}
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "40"))


def served_schema() -> dict:
    """The app's own OpenAPI document, with each JSON body's schema added."""
    spec = create_app(Settings().replace({"storage.data_dir": "memory://schema"})).openapi_schema.to_schema()
    names, components = msgspec.json.schema_components(
        list(BODIES.values()), ref_template="#/components/schemas/{name}"
    )
    spec.setdefault("components", {}).setdefault("schemas", {}).update(components)
    for ((path, method), _), ref in zip(BODIES.items(), names, strict=True):
        spec["paths"][path][method]["requestBody"] = {
            "required": True, "content": {"application/json": {"schema": ref}},
        }
    return spec


schema = schemathesis.openapi.from_dict(served_schema())


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root: Path = tmp_path_factory.mktemp("schema-fuzz")
    srv = Server(root / "data", log_path=root / "server.log").start()
    yield srv
    srv.kill()


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_operation_answers_5xx_and_every_rejection_says_why(case: schemathesis.Case, server: Server) -> None:
    response = case.call(base_url=server.url, timeout=60)
    assert response.status_code < 500, (case.method, case.path, response.status_code, response.text[:300])
    if response.status_code >= 400 and response.status_code != 405:
        reason = response.json()["detail"]["reason"]
        assert isinstance(reason, str) and reason, response.text[:300]
