"""The store on S3-compatible object storage: two stateless nodes serving one memory.

A local S3 server (moto's server mode) runs on loopback for the module; the nodes are real
`codemem serve` processes given `--data-dir s3://bucket/prefix` and the usual AWS_*
variables, as a deployment would.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import boto3
import httpx
import lancedb
import pytest

from codemem.errors import Conflict
from codemem.store.claims import RequestClaims
from tests.server import Server, free_port

BUCKET, PREFIX = "codemem-test", "team-memory"


@pytest.fixture(scope="module")
def s3_env() -> Iterator[dict[str, str]]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(endpoint, timeout=1)
            break
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                proc.kill()
                raise
            time.sleep(0.1)
    env = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1",
           "AWS_ENDPOINT_URL": endpoint, "AWS_ALLOW_HTTP": "true"}
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="test",
                 aws_secret_access_key="test").create_bucket(Bucket=BUCKET)
    yield env
    proc.kill()
    proc.wait()


@pytest.fixture(scope="module")
def nodes(s3_env: dict[str, str]) -> Iterator[tuple[Server, Server]]:
    uri = f"s3://{BUCKET}/{PREFIX}"
    # One node owns compaction; the other serves only (see README, deployment).
    first = Server(uri, env={**s3_env, "CODEMEM_COMPACT_INTERVAL_S": "1"}).start(timeout=180)
    second = Server(uri, env={**s3_env, "CODEMEM_COMPACT_INTERVAL_S": "0"}).start(timeout=180)
    yield first, second
    for node in (first, second):
        node.kill()


def storage_options(env: dict[str, str]) -> dict[str, str]:
    return {"aws_access_key_id": "test", "aws_secret_access_key": "test", "region": "us-east-1",
            "aws_endpoint": env["AWS_ENDPOINT_URL"], "allow_http": "true"}


def add(node: Server, request_id: str, session_id: str, text: str) -> int:
    body = {"request_id": request_id, "user_id": "team", "session_id": session_id,
            "messages": [{"role": "user", "content": text}]}
    return httpx.post(node.url + "/add", json=body, timeout=120).status_code


def found(node: Server, token: str) -> bool:
    r = httpx.post(node.url + "/search", json={"user_id": "team", "query": token, "top_k": 5}, timeout=60)
    assert r.status_code == 200, r.text
    return any(token in json.dumps(hit) for hit in r.json()["data"])


def test_an_add_on_one_node_is_found_at_once_on_the_other(nodes: tuple[Server, Server]) -> None:
    first, second = nodes
    for i in range(4):
        writer, reader = (first, second) if i % 2 == 0 else (second, first)
        token = f"platypus{i}gadget"
        assert add(writer, f"cross-{i}", f"s-{i}", f"{token} raised KeyError in settings loader") == 200
        assert found(reader, token) and found(writer, token)


def test_the_data_lives_in_the_bucket(nodes: tuple[Server, Server], s3_env: dict[str, str]) -> None:
    s3 = boto3.client("s3", endpoint_url=s3_env["AWS_ENDPOINT_URL"], region_name="us-east-1",
                      aws_access_key_id="test", aws_secret_access_key="test")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix=PREFIX + "/items.lance/")["Contents"]]
    assert any("/data/" in k for k in keys) and any("_versions" in k for k in keys)


def test_retries_reaching_both_nodes_at_once_store_one_copy(nodes: tuple[Server, Server], s3_env: dict[str, str]) -> None:
    first, second = nodes
    sends = [(node, f"dup-{i}", f"d-{i}", f"duplicated chunk {i}") for i in range(6) for node in (first, second, first, second)]
    with ThreadPoolExecutor(len(sends)) as pool:
        statuses = list(pool.map(lambda a: add(*a), sends))
    # 409 is the contract's "still being processed elsewhere": the platform retries it.
    assert set(statuses) <= {200, 409}, statuses
    for (node, *args), status in zip(sends, statuses, strict=True):
        if status == 409:
            assert add(node, *args) == 200
    table = lancedb.connect(f"s3://{BUCKET}/{PREFIX}", storage_options=storage_options(s3_env)).open_table("items")
    for i in range(6):
        assert table.count_rows(f"kind = 'message' AND session_id = 'd-{i}'") == 1


def test_a_request_id_reused_with_another_body_on_another_node_is_refused(nodes: tuple[Server, Server]) -> None:
    first, second = nodes
    assert add(first, "reused-n", "rn", "the first content of a reused id") == 200
    assert add(second, "reused-n", "rn", "other content under the same id") == 409
    assert add(first, "reused-n", "rn", "other content under the same id") == 409
    assert add(second, "reused-n", "rn", "the first content of a reused id") == 200  # a retry, on the other node
    assert found(second, "first") and not found(first, "other content")


def test_a_claim_left_by_a_dead_node_is_taken_over_and_a_live_one_answers_409(s3_env: dict[str, str],
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in s3_env.items():
        monkeypatch.setenv(name, value)
    claims = RequestClaims(f"s3://{BUCKET}/claims-test", wait_s=0.5, stale_s=3600, poll_s=0.05)
    other = RequestClaims(f"s3://{BUCKET}/claims-test", wait_s=0.5, stale_s=0.0, poll_s=0.05)
    with claims.hold("k1", stored=lambda: False) as mine:
        assert mine
        with pytest.raises(Conflict), claims.hold("k1", stored=lambda: False):
            pass  # held by a live writer, not stored yet: 409 after wait_s
        with claims.hold("k1", stored=lambda: True) as second:
            assert second is False  # stored meanwhile: the caller answers it as a duplicate
    # A claim never released (its node died): with stale_s 0 it is taken over at once.
    other._create(other.prefix + "k2")
    with other.hold("k2", stored=lambda: False) as mine:
        assert mine


def test_a_restarted_node_serves_everything_acknowledged(nodes: tuple[Server, Server]) -> None:
    _, second = nodes
    assert second.stop() == 0
    second.start(timeout=180)
    for i in range(4):
        assert found(second, f"platypus{i}gadget")


def test_users_written_through_both_nodes_at_once_stay_apart_and_single(nodes: tuple[Server, Server],
                                                                       s3_env: dict[str, str]) -> None:
    """Several users' Adds spread over both nodes at once, every Add sent to both (a retry that
    reached the other node): each user's Search, on either node, finds its own marks and none
    of the others', and the bucket holds every message once."""
    first, second = nodes
    users = ("iso-a", "iso-b", "iso-c")

    def send(args: tuple[Server, str, int]) -> int:
        node, user, i = args
        body = {"request_id": f"{user}-{i}", "user_id": user, "session_id": f"{user}-s{i % 2}",
                "messages": [{"role": "user", "content": f"mark{user.replace('-', '')}n{i} broke the settings loader"}]}
        status = httpx.post(node.url + "/add", json=body, timeout=120).status_code
        while status == 409:  # the copy on the other node is still being stored: retried, as the platform does
            time.sleep(0.2)
            status = httpx.post(node.url + "/add", json=body, timeout=120).status_code
        return status

    sends = [(node, user, i) for user in users for i in range(4) for node in (first, second)]
    with ThreadPoolExecutor(8) as pool:
        assert set(pool.map(send, sends)) == {200}
    for user in users:
        for node in (first, second):
            r = httpx.post(node.url + "/search", json={"user_id": user, "query": "settings loader broke", "top_k": 50},
                           timeout=60)
            assert r.status_code == 200, r.text
            text = json.dumps(r.json()["data"])
            assert all(f"mark{user.replace('-', '')}n{i}" in text for i in range(4)), (user, node.url)
            assert not any(f"mark{other.replace('-', '')}n" in text for other in users if other != user)
    table = lancedb.connect(f"s3://{BUCKET}/{PREFIX}", storage_options=storage_options(s3_env)).open_table("items")
    for user in users:
        assert table.count_rows(f"kind = 'message' AND user_id = '{user}'") == 4
