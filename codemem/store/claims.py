"""Request claims on S3: one node at a time stores a given Add, whichever node it reached.

On a local data directory the session locks (`locks.py`) serialise a request's copies
across processes. Nodes sharing a bucket have no such lock, and LanceDB does not refuse a
second copy of a row (two concurrent inserts of one id both land), so a retry reaching two
nodes at once could be stored twice. Before writing, a node creates a small claim object
for the request with a conditional PUT (`If-None-Match: *`, which S3 and compatible stores
honour atomically); the node that gets it stores the Add and deletes the claim. Another
node waits for the first copy to appear and answers it as the duplicate it is, or answers
409 (the contract's "still being processed", which the platform retries). A claim left by
a node that died mid-write is taken over once it is `stale_s` old.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

from codemem.errors import Conflict, StoreMismatch

CLAIMS_DIR = ".codemem-claims"


class RequestClaims:
    def __init__(self, uri: str, wait_s: float = 10.0, stale_s: float = 120.0, poll_s: float = 0.2) -> None:
        try:
            import boto3
        except ImportError:
            raise StoreMismatch("an s3:// data directory needs boto3: pip install 'codemem[s3]'") from None
        bucket, _, prefix = uri.removeprefix("s3://").partition("/")
        self.bucket = bucket
        self.prefix = f"{prefix.strip('/')}/{CLAIMS_DIR}/" if prefix.strip("/") else f"{CLAIMS_DIR}/"
        self.wait_s, self.stale_s, self.poll_s = wait_s, stale_s, poll_s
        # The variables LanceDB's own S3 client reads, so both reach the same store.
        self.s3 = boto3.client(
            "s3",
            endpoint_url=os.environ.get("AWS_ENDPOINT_URL") or os.environ.get("AWS_ENDPOINT") or None,
            region_name=os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or None,
        )

    @contextlib.contextmanager
    def hold(self, request_key: str, stored: Callable[[], bool]) -> Iterator[bool]:
        """Claim `request_key` for the block and yield True; yield False when another node
        has stored it; Conflict when another node is still storing it after `wait_s`."""
        key = self.prefix + request_key
        deadline = time.monotonic() + self.wait_s
        while not self._create(key):
            if stored():
                yield False
                return
            if self._age_s(key) > self.stale_s:  # its node died mid-write: take it over
                self.s3.delete_object(Bucket=self.bucket, Key=key)
                continue
            if time.monotonic() > deadline:
                raise Conflict("this request_id is being stored by another node; retry it")
            time.sleep(self.poll_s)
        try:
            yield not stored()  # False: a copy was stored and released just before our claim
        finally:
            self.s3.delete_object(Bucket=self.bucket, Key=key)

    def _create(self, key: str) -> bool:
        from botocore.exceptions import ClientError

        try:
            self.s3.put_object(Bucket=self.bucket, Key=key, Body=b"", IfNoneMatch="*")
            return True
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("PreconditionFailed", "ConditionalRequestConflict"):
                return False
            raise

    def _age_s(self, key: str) -> float:
        from botocore.exceptions import ClientError

        try:
            modified = self.s3.head_object(Bucket=self.bucket, Key=key)["LastModified"]
        except ClientError:
            return 0.0  # just released: the next attempt will tell
        return (datetime.now(UTC) - modified).total_seconds()
