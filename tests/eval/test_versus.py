"""eval.load.versus.compare: a cost target is read as the ratio of the two sides' medians over
rounds, in the direction the figure runs (throughput up, time and memory down)."""

from __future__ import annotations

from typing import Any

from eval.load.versus import compare


def _side(ingest_s: float, tokens_per_s: float, rss_gb: float, p95_ms: float, cold_s: float) -> dict[str, Any]:
    search = {"p50_ms": p95_ms / 2, "p95_ms": p95_ms, "hit1": 0.6}
    return {"scale": {"checkpoints": [{"ingest": {"wall_s": ingest_s}, "memory": {"idle_rss_anon_gb": 9.9}, "search": search},
                                      {"ingest": {"wall_s": 1.0}, "memory": {"idle_rss_anon_gb": rss_gb}, "search": search}],
                      "summary": {"add_tokens_per_s_mean": tokens_per_s}},
            "cli": {"cold_search": {"p50_s": cold_s}}}


def test_ratios_are_of_medians_and_targets_run_the_figure_s_way() -> None:
    rounds = [
        {"baseline": _side(40, 1000, 1.0, 70, 1.0), "current": _side(50, 700, 1.1, 90, 1.0)},
        {"baseline": _side(60, 1000, 1.0, 70, 1.0), "current": _side(70, 900, 1.3, 80, 1.2)},
        {"baseline": _side(50, 1000, 1.0, 70, 1.0), "current": _side(60, 850, 1.2, 84, 1.05)},
    ]
    figures = compare(rounds)
    ingest = figures["ingest_300_trajectories_s"]
    assert (ingest["baseline"], ingest["current"], ingest["ratio"]) == (50, 60, 1.2)  # the first user's
    assert ingest["met"] and ingest["target"] == "<= 1.5x"
    assert figures["add_tokens_per_s"]["ratio"] == 0.85 and figures["add_tokens_per_s"]["met"]  # higher is better
    assert figures["idle_rss_anon_gb"]["ratio"] == 1.2 and figures["idle_rss_anon_gb"]["met"]  # after the last user
    assert figures["search_p95_ms"]["ratio"] == 1.2 and figures["search_p95_ms"]["met"]
    assert figures["cold_search_p50_s"]["ratio"] == 1.05 and figures["cold_search_p50_s"]["met"]
    assert "met" not in figures["search_p50_ms"]  # reported, no target
    slower = compare([{"baseline": _side(40, 1000, 1.0, 70, 1.0), "current": _side(40, 790, 1.0, 85, 1.0)}])
    assert not slower["add_tokens_per_s"]["met"] and not slower["search_p95_ms"]["met"]
