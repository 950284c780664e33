"""/metrics: Prometheus text with per-endpoint requests and the store's state, no user ids."""

from __future__ import annotations

import re

from litestar.testing import TestClient

from tests.conftest import add_body


def _value(text: str, pattern: str) -> float:
    m = re.search(rf"^{pattern} ([0-9.e+]+)$", text, re.MULTILINE)
    assert m, f"no sample matching {pattern!r}"
    return float(m.group(1))


def test_metrics_count_requests_by_route_and_report_the_store(client: TestClient) -> None:
    secret_user = "alice@example.com"
    assert client.post("/add", json=add_body("m1", user_id=secret_user, texts=("fixed the flaky test",))).status_code == 200
    client.post("/search", json={"user_id": secret_user, "query": "flaky test", "top_k": 5})
    stored = client.get("/metrics").text
    assert _value(stored, "codemem_store_rows") >= 2  # the message and its experience card
    assert _value(stored, "codemem_store_fragments") >= 1
    client.delete(f"/users/{secret_user}")
    r = client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    text = r.text
    assert _value(text, r'codemem_http_requests_total\{app_name="codemem",method="POST",path="/add",status_code="200"\}') >= 1
    assert _value(text, r'codemem_http_request_duration_seconds_count\{app_name="codemem",method="POST",path="/search",status_code="200"\}') >= 1
    assert 'path="/users/{user_id}"' in text
    assert secret_user not in text and "flaky" not in text
    assert _value(text, "codemem_store_rows") == 0  # the user's memories are gone
    assert "codemem_compactions_total" in text


def test_metrics_need_the_key_when_one_is_set(keyed_client: TestClient) -> None:
    assert keyed_client.get("/metrics").status_code == 401
    assert keyed_client.get("/metrics", headers={"X-Api-Key": "s3cret-key"}).status_code == 200
