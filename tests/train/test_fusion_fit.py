"""Fitting the fusion on training queries: the grid follows the retriever that finds the gold,
and the quiet threshold separates answers whose first session is gold from the others."""

from __future__ import annotations

import json
from pathlib import Path

from codemem.ranking.relevance import SessionSignals
from train.fusion.fit import (
    Query,
    figures,
    fit_fusion,
    fit_quiet_below,
    load_queries,
    main,
    quiet_figures,
)
from train.ranker.build_data import signals_record


def _signals(lexical: list[str], dense: list[str], cosine: float = 0.6) -> SessionSignals:
    return SessionSignals({"lexical": {k: i for i, k in enumerate(lexical, 1)},
                           "dense": {k: i for i, k in enumerate(dense, 1)}},
                          {k: cosine - 0.05 * i for i, k in enumerate(dense)},
                          {k: 20.0 - i for i, k in enumerate(lexical)}, {})


def _queries() -> list[Query]:
    """The dense retriever puts the gold first, BM25 puts it third, in every related query;
    the absent ones have nothing related and a weak nearest session."""
    related = [Query(f"r{i % 2}", _signals(["a", "b", "gold"], ["gold", "a", "b"]), frozenset({"gold"}))
               for i in range(12)]
    absent = [Query(f"r{i % 2}", _signals(["a", "b", "c"], ["c", "b", "a"], cosine=0.1), frozenset())
              for i in range(12)]
    return related + absent


def test_the_grid_weighs_the_retriever_that_finds_the_gold() -> None:
    queries = [q for q in _queries() if q.gold]
    config = fit_fusion(queries)
    assert config.fusion.dense_weight == 2.0  # the grid's largest
    assert figures(queries, config)["hit@1"] == 1.0


def test_the_quiet_threshold_separates_gold_first_from_nothing_related() -> None:
    queries = _queries()
    config = fit_fusion([q for q in queries if q.gold])
    threshold = fit_quiet_below(queries, config)
    assert 0.0 < threshold <= 1.0
    assert quiet_figures(queries, config.replace({"calibration.quiet_below": threshold})) == {
        "quiet_when_nothing_related": 1.0, "loud_when_first_gold": 1.0}


def test_the_command_reads_build_data_records_and_writes_its_figures(tmp_path: Path) -> None:
    names = {k: k for k in ("a", "b", "c", "gold")}
    lines = [json.dumps({"repo": q.repo, "query": "q", "text": "q",
                         "labels": {"gold": 2} if q.gold else {},
                         "signals": signals_record(q.signals, names)}) for q in _queries()]
    (tmp_path / "queries.jsonl").write_text("\n".join(lines) + "\n")
    assert [q.gold for q in load_queries(tmp_path)] == [q.gold for q in _queries()]
    out = tmp_path / "fit.json"
    assert main(["--signals", str(tmp_path), "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["held_out"]["hit@1"] == 1.0 and result["in_sample"]["chosen"]["dense_weight"] == 2.0
