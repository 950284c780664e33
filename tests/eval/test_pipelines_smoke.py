"""The evaluation pipelines end to end on tiny samples, so none of them can rot unseen:
`eval.replay`, `eval.load.latency`, `eval.load`, `eval.quality.memoryarena`, `eval.load.restart`,
`eval.quality.locomo`, `eval.load.scale` and `eval.load.kill`, each run as its own
command (`python -m eval.load.latency` etc., the way eval/README.md gives them) with its own real server,
writing to a temporary `--out`. They run at the same time (each loads the model in its
server, so running them side by side keeps both cores busy); together they take about a
minute and a half on an idle 2-core machine.

The figures of such tiny runs mean nothing; what is checked is that each run finishes,
writes its result with provenance, and that the invariants hold (the relevant memory ranks
its gold first; no acknowledged Add lost, through crashes too; every earlier MemoryArena
answer present; no other user's item in an answer).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from eval._paths import REPO_ROOT
from eval._provenance import PROVENANCE_KEYS
from tests.conftest import needs_swe_lite
from tests.shared_data import SWE_LITE, SWE_LITE_TAR

FIXTURE = REPO_ROOT / "tests" / "fixtures" / "memoryarena"
LOCOMO_FIXTURE = REPO_ROOT / "tests" / "fixtures" / "locomo"  # synthetic, in LoCoMo's format
TIMEOUT_S = 420

# name -> (needs the shared data, arguments after `python -m <MODULES[name]>`; {out} is the tmp dir)
PIPELINES: dict[str, tuple[bool, list[str]]] = {
    "replay": (True, ["--smoke", "--tasks", "1", "--others", "2", "--baselines", "bm25-traj,bm25-msg",
                      "--compact-timeout", "0", "--data", str(SWE_LITE), "--out", "{out}/replay"]),
    "latency": (True, ["--items", "40", "--chunk", "20", "--searches", "5", "--concurrency", "2", "--sessions", "2",
                       "--compact-timeout", "0", "--data", str(SWE_LITE),
                       "--out", "{out}/latency.json"]),
    "load": (True, ["--seconds", "3", "--adders", "2", "--searchers", "2", "--preload", "40", "--storm", "3",
                    "--crash-clients", "2", "--crash-after", "2", "--sessions", "2", "--data", str(SWE_LITE),
                    "--out", "{out}/load.json"]),
    "memoryarena": (False, ["--data", str(FIXTURE), "--out", "{out}/memoryarena.json"]),
    "locomo": (False, ["--data", str(LOCOMO_FIXTURE), "--out", "{out}/locomo"]),
    "restart": (True, ["--trajectories", "6", "--tail", "4", "--queries", "3", "--compact-timeout", "90",
                       "--data", str(SWE_LITE), "--out", "{out}/restart"]),
    "scale": (True, ["--users", "2", "--trajectories", "3", "--tasks", "2", "--idle-s", "1", "--data", str(SWE_LITE),
                     "--out", "{out}/scale.json"]),
    "kill": (True, ["--users", "2", "--trajectories", "10", "--kill-every", "1,2", "--data", str(SWE_LITE),
                    "--out", "{out}/kill.json"]),
}


MODULES = {"replay": "eval.replay", "latency": "eval.load.latency", "load": "eval.load",
           "memoryarena": "eval.quality.memoryarena", "locomo": "eval.quality.locomo",
           "restart": "eval.load.restart", "scale": "eval.load.scale", "kill": "eval.load.kill"}


@dataclass
class Run:
    name: str
    out: Path
    returncode: int | None
    log: str
    wall_s: float

    def check(self) -> None:
        assert self.returncode == 0, f"python -m {MODULES[self.name]} exited {self.returncode}:\n{self.log[-4000:]}"

    def result(self, suffix: str = ".json") -> dict:
        self.check()
        path = self.out / f"{self.name}{suffix}"
        assert path.exists(), f"{path} not written:\n{self.log[-2000:]}"
        return json.loads(path.read_text())


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Run]]:
    """Start every pipeline whose data is here, at once; wait for all."""
    out = tmp_path_factory.mktemp("eval-smoke")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    procs: dict[str, tuple[subprocess.Popen[bytes], Path, float]] = {}
    try:
        for name, (needs_data, args) in PIPELINES.items():
            if needs_data and not SWE_LITE_TAR.exists():
                continue
            log = out / f"{name}.log"
            with log.open("wb") as fh:
                cmd = [sys.executable, "-m", MODULES[name], *(a.replace("{out}", str(out)) for a in args)]
                procs[name] = (subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT,
                                                stdin=subprocess.DEVNULL), log, time.monotonic())
        deadline = time.monotonic() + TIMEOUT_S
        done: dict[str, Run] = {}
        for name, (proc, log, started) in procs.items():
            try:
                rc: int | None = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)
                rc = None
            done[name] = Run(name, out, rc, log.read_text(errors="replace"), time.monotonic() - started)
        yield done
    finally:
        for proc, _, _ in procs.values():
            if proc.poll() is None:  # interrupted: the pipeline stops its own server on SIGINT
                proc.send_signal(2)
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()


def _has_provenance(result: dict, module: str) -> None:
    prov = result["provenance"]
    assert set(PROVENANCE_KEYS) <= set(prov), prov
    assert prov["command"].startswith(f"python -m {module} ")
    assert prov["date_utc"].endswith("+00:00")
    if (REPO_ROOT / ".git").exists():
        assert len(prov["git_head"] or "") == 40, prov
    assert isinstance(prov["git_dirty"], bool)
    machine = prov["machine"]
    assert machine["cpu_count"] >= 1 and machine["memory_gb"] and machine["platform"]
    assert len(machine["loadavg_at_start"]) == 3 and len(machine["loadavg_at_end"]) == 3
    assert prov["wall_s"] > 0


@needs_swe_lite  # set up before `runs`: without the data, nothing is started for this test
def test_replay_smoke(runs: dict[str, Run]) -> None:
    run = runs["replay"]
    result = run.result()
    _has_provenance(result, "eval.replay")
    assert result["service"]["ingest"]["n_errors"] == 0 and not result["contract_notes"]
    rows = {(r["system"], r["condition"]): r for r in result["summary"]}
    systems, conditions = ("codemem", "bm25-traj", "bm25-msg"), ("relevant", "noisy-repo", "noisy-all", "absent")
    assert set(rows) == {(s, c) for s in systems for c in conditions}
    relevant = rows[("codemem", "relevant")]
    assert relevant["hit1"] == 1.0 and relevant["mrr"] == 1.0 and relevant["found"] == relevant["queries"] == 1
    assert rows[("codemem", "absent")]["hit1"] is None and rows[("codemem", "absent")]["found_share"] is None
    for (system, _), r in rows.items():
        assert r["latency_measured"] == ("HTTP" if system == "codemem" else "in-process")
    assert "trajectory level" in result["run"]["scoring"]
    md = (run.out / "replay.md").read_text()
    assert "| found |" in md and "| in-process |" in md and "| HTTP |" in md
    assert (run.out / "replay.png").stat().st_size > 0


@needs_swe_lite
def test_latency_smoke(runs: dict[str, Run]) -> None:
    result = runs["latency"].result()
    _has_provenance(result, "eval.load.latency")
    (cp,) = result["checkpoints"]
    assert cp["items"] == 40 and cp["add"]["n_errors"] == 0 and cp["add"]["latency_ms"]["n"] == 2
    assert cp["search"]["latency_ms"]["n"] == 5 and cp["search"]["errors"] == []
    # Its queries are other tasks than the two sessions stored: a Search may find nothing closely
    # related there (a quiet answer), so only that each was answered is checked.
    assert "hits_p50" in cp["search"] and cp["query_embed_ms"]["n"] == 5
    assert (runs["latency"].out / "latency.md").exists()


@needs_swe_lite
def test_load_smoke(runs: dict[str, Run]) -> None:
    result = runs["load"].result()
    _has_provenance(result, "eval.load")
    assert result["preloaded_messages"] >= 40
    assert result["sustained"]["add"]["requests"] > 0 and result["sustained"]["search"]["requests"] > 0
    assert result["acknowledged_adds"] > 0 and result["lost"] == 0
    assert result["storm"]["found_once"] == 3 and result["storm"]["duplicated"] == result["storm"]["missing"] == 0
    crash = result["crash"]
    assert crash["acknowledged"] > 0 and crash["acknowledged_lost"] == 0 and crash["half_written"] == 0


def test_memoryarena_smoke(runs: dict[str, Run]) -> None:
    result = runs["memoryarena"].result()
    _has_provenance(result, "eval.quality.memoryarena")
    assert result["errors"] == []
    assert set(result["domains"]) == {"formal_reasoning_math", "formal_reasoning_phys", "bundled_shopping",
                                      "progressive_search"}
    assert all(d["dependency_recall"] == 1.0 for d in result["domains"].values())


@needs_swe_lite
def test_restart_smoke(runs: dict[str, Run]) -> None:
    result = runs["restart"].result()
    _has_provenance(result, "eval.load.restart")
    assert result["store"]["bulk_errors"] == result["store"]["tail_errors"] == 0
    m = result["measured"]
    # The store was left loose, and the server started on it compacted it without a new write.
    loose = m["uncompacted"]["store"]
    assert (loose["small_fragments"] > 8 or loose["unindexed_rows"] > 500) and loose["compactions"] == 0
    assert m["restart"]["compacted_after_s"] is not None
    assert m["restart"]["store_after"]["unindexed_rows"] == 0 and m["restart"]["store_after"]["compactions"] >= 1
    assert m["restart"]["after"]["n"] == m["compacted"]["n"] == 3 and m["after_vs_compacted_p50"] > 0
    assert "| restart, after the start-up compaction |" in (runs["restart"].out / "restart.md").read_text()


def test_locomo_smoke(runs: dict[str, Run]) -> None:
    run = runs["locomo"]
    result = run.result()
    _has_provenance(result, "eval.quality.locomo")
    assert result["ingest"]["conv-demo"]["errors"] == [] and result["ingest"]["conv-demo"]["sessions"] == 2
    rows = {(r["system"], r["scope"]): r for r in result["summary"]}
    assert set(rows) == {(s, c) for s in ("codemem", "bm25-turns") for c in ("all", "conv-demo")}
    # The whole synthetic conversation fits in 2k tokens: every evidence turn is there.
    assert rows[("codemem", "all")]["questions"] == 3 and rows[("codemem", "all")]["recall_2k"] == 1.0
    assert {q["category"] for q in result["questions"]} == {1, 2, 4}  # category 5 left out
    assert "| bm25-turns | all | 3 |" in (run.out / "locomo.md").read_text()


@needs_swe_lite
def test_scale_smoke(runs: dict[str, Run]) -> None:
    run = runs["scale"]
    result = run.result()
    _has_provenance(result, "eval.load.scale")
    first, second = result["checkpoints"]
    assert (first["users"], second["users"]) == (1, 2) and result["summary"]["add_errors"] == 0
    assert abs(second["tokens_total"] - 2 * first["tokens_total"]) <= 1 and first["tokens_total"] > 0
    for cp in (first, second):
        assert cp["memory"]["rss_anon_gb"] > 0 and cp["memory"]["idle_rss_anon_gb"] > 0 and cp["disk_gb"] > 0
        assert cp["search"]["queries"] == 2 and cp["search"]["errors"] == 0 and cp["search"]["foreign_items"] == 0
    # Another user's memory changes nothing of user 0's answers: the same first experience,
    # the same hit@1 (whatever the ranking makes of two tasks).
    assert second["search"]["first_as_when_alone"] == 2 and second["search"]["hit1"] == first["search"]["hit1"]
    assert (run.out / "scale.png").stat().st_size > 0


@needs_swe_lite
def test_kill_smoke(runs: dict[str, Run]) -> None:
    result = runs["kill"].result()
    _has_provenance(result, "eval.load.kill")
    # What tells a lost Add from one the indexes hide, and when the kills came, where one fails.
    seen = {k: result[k] for k in ("adds_sent", "acknowledged", "stored_requests", "stored_requests_by_scan",
                                   "acknowledged_lost", "lost_but_scanned", "lost_examples", "errors", "kills")}
    assert result["kill_count"] >= 1 and result["error_count"] == 0, seen
    assert result["acknowledged"] == result["adds_sent"] == result["stored_requests"] > 0, seen
    assert result["acknowledged_lost"] == result["acknowledged_stored_twice"] == 0, seen
    assert all(n > 0 for n in result["search_items_per_user_after_restart"].values())
