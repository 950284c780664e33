"""`/metrics` in Prometheus text format: requests and their latency per endpoint, requests
in flight and refused for capacity, the Add bytes in flight and the Adds queued behind them,
and the store's state (items, fragments, rows not yet
in the full-text index, compactions).

Endpoints are labelled by their route template (`/users/{user_id:path}`), never by the
path itself, so no user id or memory content reaches a metric. The endpoint takes the same
API key as Add and Search.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from litestar import Response, get
from litestar.plugins.prometheus import PrometheusConfig, PrometheusController
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from api.admission import Admission, ByteBudget
from api.auth import require_api_key
from codemem.memory import Memory

# Search and Add latency spans 10 ms to minutes (a whole session in one Add).
BUCKETS: list[str | float] = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300]

_GAUGES = {
    "rows": "Items stored: messages, experience cards, steps and user registrations",
    "fragments": "Data fragments of the items table (each filtered query opens them all)",
    "unindexed_rows": "Rows not yet folded into the full-text index",
    "pending_writes": "Writes queued for the group-commit writer",
}
_COUNTERS = {
    "compactions": "Background compactions completed",
    "compaction_failures": "Compaction rounds that lost a commit race and were retried",
}


class StoreCollector(Collector):
    """Reads the serving app's state at scrape time (one app serves a process)."""

    def __init__(self) -> None:
        self.memory: Memory | None = None
        self.admission: dict[str, Admission] = {}
        self.add_bytes: ByteBudget | None = None

    def collect(self) -> Iterator[Metric]:
        inflight = GaugeMetricFamily("codemem_requests_inflight", "Add and Search requests in flight", labels=["kind"])
        refused = CounterMetricFamily("codemem_requests_refused", "Requests answered 503: over capacity", labels=["kind"])
        for kind, gate in self.admission.items():
            inflight.add_metric([kind], gate.inflight)
            refused.add_metric([kind], gate.refused)
        yield inflight
        yield refused
        if self.add_bytes is not None:
            budget = self.add_bytes
            yield GaugeMetricFamily("codemem_add_bytes_inflight", "Add body bytes being parsed and stored", value=budget.held)
            yield GaugeMetricFamily("codemem_adds_queued", "Adds waiting for room under max_add_bytes_inflight",
                                    value=budget.waiting)
            yield GaugeMetricFamily("codemem_adds_queued_bytes", "Body bytes of the Adds waiting", value=budget.waiting_bytes)
        memory = self.memory
        if memory is None:
            return
        stats = memory.stats()
        for name, doc in _GAUGES.items():
            yield GaugeMetricFamily(f"codemem_store_{name}", doc, value=stats[name])
        for name, doc in _COUNTERS.items():
            yield CounterMetricFamily(f"codemem_{name}", doc, value=stats[name])


STORE = StoreCollector()
REGISTRY.register(STORE)


class MetricsController(PrometheusController):
    """With several workers (`PROMETHEUS_MULTIPROC_DIR` set), request metrics are summed
    over all of them; the store's figures and the requests in flight are the answering
    worker's view."""

    guards = [require_api_key]

    @get()
    async def get(self) -> Response:
        registry = REGISTRY
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)
            registry.register(STORE)
        return Response(generate_latest(registry), headers={"Content-Type": CONTENT_TYPE_LATEST})


def prometheus() -> PrometheusConfig:
    return PrometheusConfig(
        app_name="codemem", prefix="codemem_http", group_path=True, buckets=BUCKETS, exclude=["^/metrics$"]
    )
