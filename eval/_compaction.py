"""The server's table read from outside the server (read-only; Lance readers never block
writers): its rows, fragments and unindexed rows, and the wait until the server's compactor
has nothing left to do, so that a benchmark times Searches on a settled store.
"""

from __future__ import annotations

import time
from typing import Any, cast

from codemem.config import Maintenance
from codemem.store.lance import COMPACT_TARGET_ROWS


def table_stats(data_dir: str) -> dict[str, int]:
    """Rows / fragments / unindexed rows (worst over the FTS/scalar indexes) / version of the
    items table, read from outside the server (read-only; Lance readers never block writers)."""
    import lancedb

    t = lancedb.connect(data_dir).open_table("items")
    s = cast("dict[str, Any]", t.stats())  # a dict at run time, whatever lancedb's annotation says
    frag = s.get("fragment_stats", {})
    sizes = [f.metadata.physical_rows for f in t.to_lance().get_fragments()]
    unindexed = 0
    try:
        for idx in t.list_indices():
            st = t.index_stats(idx.name)
            if st is not None:
                unindexed = max(unindexed, int(st.num_unindexed_rows))
    except Exception:  # noqa: BLE001
        unindexed = -1
    return {"rows": int(s.get("num_rows", 0)), "fragments": int(frag.get("num_fragments", 0)),
            "small_fragments": int(frag.get("num_small_fragments", 0)),
            "fragments_to_compact": sum(size < COMPACT_TARGET_ROWS for size in sizes),
            "unindexed_rows": unindexed, "version": int(t.version)}


def settled(stats: dict[str, int]) -> bool:
    """Whether the compactor has nothing left to do on a store with these `table_stats`."""
    return stats["unindexed_rows"] == 0 and stats["fragments_to_compact"] <= Maintenance().max_small_fragments


def wait_compacted(data_dir: str, timeout_s: float, poll_s: float = 2.0, settle_polls: int = 3) -> dict[str, Any]:
    """Wait until the server's compactor has folded in everything the Adds left, as it
    judges it: nothing unindexed, no more fragments it would merge (under
    `COMPACT_TARGET_ROWS` rows) than its bounds (`Maintenance`) allow (it leaves larger ones alone, so a
    big store stays in many fragments; Lance keeps an indexed fragment apart from
    not-yet-indexed ones, so a few small ones can remain), and the table version unchanged
    for `settle_polls` polls (an optimize makes several commits). "ran" says whether the
    compactor committed anything after the Adds (it may have finished before the wait
    began)."""
    t0 = time.monotonic()
    first = table_stats(data_dir)
    st: dict[str, int] = first
    stable, last_version = 0, first["version"]
    while time.monotonic() - t0 < timeout_s:
        time.sleep(poll_s)
        try:
            st = table_stats(data_dir)
        except Exception as exc:  # noqa: BLE001 - mid-commit: look again
            st = {"error": type(exc).__name__}  # type: ignore[dict-item]
            continue
        stable = stable + 1 if st["version"] == last_version else 0
        last_version = st["version"]
        if settled(st) and stable >= settle_polls:
            return {"compacted": True, "ran": st["version"] > first["version"],
                    "waited_s": round(time.monotonic() - t0, 1), "before": first, "stats": st}
    return {"compacted": False, "ran": st.get("version", 0) > first["version"],
            "waited_s": round(time.monotonic() - t0, 1), "before": first, "stats": st}
