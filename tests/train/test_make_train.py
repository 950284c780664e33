"""`make train` end to end on a small fixture: the orchestrator's replay, ranker and decision
steps run into a temporary cache, give a model the product loads and cards that say where they
came from; a second run reuses every step; missing sources stop the run before any work."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from codemem.contract.types import Message
from codemem.ranking.learned import LearnedRanker
from codemem.timeline.decisions import DecisionReader
from train.__main__ import MISSING
from train.__main__ import main as make_train
from train.pipeline import execute, plan
from train.provenance import file_sha256, tree_state
from train.ranker.featureset import CANDIDATES, monotone
from train.ranker.train import main as train_ranker
from train.steps import RankerData, decisions_step, install_ranker, ranker_step, replay_step

SENTENCES = Path(__file__).resolve().parents[2] / "train" / "decisions" / "sentences.jsonl"
README = Path(__file__).resolve().parents[2] / "train" / "ranker" / "README.md"
# Three repositories of six tasks each. In each, a look-alike (the third task) repeats the first
# one's words and names its function but fixes another one; the fourth and sixth come back to the
# first's function by name, the fifth to the second in its words only. So the words alone pick the
# look-alike, the code's references alone cannot tell the fifth's, and a model that weighs both
# ranks them all (the ship rule asks a model to beat its best single feature out of fold).
TOPICS = {
    "dates": ("Timezone offset lost when serialising naive datetimes", "dates", "to_iso"),
    "cache": ("Cache key collides for unicode paths", "cache", "resolve_cache_key"),
    "colorbar": ("Colour bar ticks overlap on logarithmic axes", "colorbar", "tick_locator"),
    "csv": ("CSV reader drops the last row without a newline", "csv", "read_rows"),
    "auth": ("Token refresh loops forever after a clock skew", "auth", "refresh_token"),
    "plot": ("Legend hides the data when placed at best", "plot", "place_legend"),
}
REPOS = {"pkg/a": ("dates", "cache"), "pkg/b": ("colorbar", "csv"), "pkg/c": ("auth", "plot")}


def _tasks(first: str, second: str) -> list[tuple[str, str, str, list[int]]]:
    """A repository's tasks in order: (problem, file, function, earlier related tasks)."""
    p1, f1, g1 = TOPICS[first]
    p2, f2, g2 = TOPICS[second]
    return [(p1, f1, g1, []), (p2, f2, g2, []),
            (f"{p1}: seen near {g1} while the docs build, in the example gallery", "docs", f"build_{first}_example", []),
            (f"{g1} is wrong again after the refactor", f1, g1, [1]),
            (f"{p2}, reported once more by another user", f2, g2, [2]),
            (f"{g1} returns a shifted value on some inputs", f1, g1, [1, 4])]


def _messages(agent: str, problem: str, f: str, g: str) -> list[Message]:
    """A small session in the agent's rendering: the task, a look at the code, the edit."""
    if agent == "mini":
        turns = [("user", f"<pr_description>\nConsider the following PR description:\n{problem}\n</pr_description>"),
                 ("assistant", f"THOUGHT: Find {g}.\n\n```bash\ngrep -n {g} pkg/{f}.py\n```"),
                 ("user", f"<returncode>0</returncode>\n<output>\n12:def {g}(value):\n</output>"),
                 ("assistant", f"THOUGHT: Fix {g}.\n\n```bash\nsed -i 's/old/new/' pkg/{f}.py && git diff\n```"),
                 ("user", f"<returncode>0</returncode>\n<output>\ndiff --git a/pkg/{f}.py b/pkg/{f}.py\n"
                          f"@@ -12,2 +12,2 @@ def {g}(value):\n-    return old(value)\n+    return new(value)\n</output>")]
    else:
        call = {"id": "t1", "type": "function", "function": {"name": "edit_file", "arguments": {
            "filePath": f"pkg/{f}.py", "old_string": f"def {g}(value): old", "new_string": f"def {g}(value): new"}}}
        turns = [("user", f"## Issue\n{problem}"), ("assistant", f"Fix {g} in pkg/{f}.py.\n" + json.dumps(call)),
                 ("user", json.dumps({"role": "tool", "tool_call_id": "t1", "content": f"Successfully edited pkg/{f}.py"}))]
    return [Message(role=r, content=c) for r, c in turns]  # type: ignore[arg-type]


def _fixture(root: Path) -> tuple[Path, dict[str, Path], Path]:
    """A `swe-verified-reuse`-shaped task folder, two agents' exported sessions, and a small
    share of the decision sentences (both labels)."""
    tasks, links = [], []
    for repo, (first, second) in REPOS.items():
        owner, name = repo.split("/")
        for n, (problem, f, g, related) in enumerate(_tasks(first, second), 1):
            tasks.append({"instance_id": f"{owner}__{name}-{n}", "repo": repo, "number": n,
                          "problem_statement": f"{problem} (report {n})", "f": f, "g": g})
            if related:
                earlier = [f"{owner}__{name}-{m}" for m in related]
                links.append({"query": f"{owner}__{name}-{n}", "same_file": earlier, "same_function": earlier})
    data = root / "swe-verified-reuse"
    data.mkdir()
    (data / "tasks.jsonl").write_text("".join(json.dumps({k: v for k, v in t.items() if k not in ("f", "g")}) + "\n"
                                              for t in tasks))
    (data / "links.json").write_text(json.dumps(links))
    sessions = {}
    for agent in ("mini", "vorflux"):
        folder = sessions[agent] = root / "sessions" / agent
        folder.mkdir(parents=True)
        for t in tasks:
            messages = _messages(agent, str(t["problem_statement"]), str(t["f"]), str(t["g"]))
            (folder / f"{t['instance_id']}.jsonl").write_bytes(b"".join(msgspec.json.encode(m) + b"\n" for m in messages))
    rows = [json.loads(line) for line in SENTENCES.read_text().splitlines() if line.strip()]
    few = [r for r in rows if r["label"] == 1][:40] + [r for r in rows if r["label"] == 0][:40]
    sentences = root / "sentences.jsonl"
    sentences.write_text("".join(json.dumps(r) + "\n" for r in few))
    return data, sessions, sentences


def test_the_ranker_and_decision_steps_train_on_a_fixture_and_a_rerun_reuses_them(tmp_path: Path,
                                                                               capsys: pytest.CaptureFixture[str]) -> None:
    data, sessions, sentences = _fixture(tmp_path)
    steps = [replay_step("replay", sessions, ["mini", "vorflux", "mixed"], data),
             ranker_step(RankerData(signals=(("replay", "mini"), ("replay", "mixed")), checks=(("replay", "vorflux"),)),
                         allow_dirty=True, install_root=None),
             decisions_step([sentences], allow_dirty=True, install_root=None)]
    cache, mirrors, tree = tmp_path / "cache", tmp_path / "no-mirrors", tree_state()
    planned = plan(steps, cache, mirrors, tree)
    assert all(p.key and not p.missing and not p.cached for p in planned)
    outputs = execute(planned, cache, mirrors, install=False)

    ranker = LearnedRanker.load(outputs["ranker"])  # the product loads what the step wrote
    card = json.loads((outputs["ranker"] / "ranker.json").read_text())
    features = CANDIDATES[card["ship_rule"]["shipped"]]  # the candidate the ship rule chose
    assert ranker.features == features and card["features"] == list(features)
    assert card["params"]["monotone_constraints"] == list(monotone(features))
    assert set(card["ship_rule"]["candidates"]) == set(CANDIDATES)
    at = card["trained_on"]
    assert (at["commit"], at["clean_tree"]) == (tree["commit"], tree["clean_tree"])
    # The data it read, named by path in the cache and hashed by content.
    for replay in ("mini", "mixed"):
        for name in ("queries.jsonl", "cards.jsonl"):
            path = outputs["replay"] / replay / name
            assert at["data_sha256"][str(path.relative_to(cache))] == file_sha256(path)
    assert at["checks"] == {"vorflux": 15} and at["repositories"] == 3 and at["ranked_queries"] > 0
    # Each ranked query's reciprocal rank by the model out of fold and by each single signal, the
    # figures of the card one query at a time.
    lines = [json.loads(line) for line in (outputs["ranker"] / "per_query.jsonl").read_text().splitlines()]
    trained = [q for q in lines if q["trains"]]
    assert len(trained) == at["ranked_queries"] and {q["source"] for q in lines if not q["trains"]} == {"vorflux"}
    by_kind = card["cv"]["by_kind"]["all"]
    for name, row in (("model", "learned"), ("dense", "dense"), ("bm25", "bm25"), ("fused", "fused")):
        assert sum(q[f"{name}_rr"] for q in trained) / len(trained) == pytest.approx(by_kind[row]["mrr"], abs=6e-4)

    # Trained again on the same data: the same model, byte for byte; the card differs only in the
    # run's times and the machine's load.
    record = json.loads((outputs["ranker"] / "step.json").read_text())
    again_out = tmp_path / "again"
    train_ranker([str(again_out) if a == str(outputs["ranker"]) else a.replace(str(outputs["ranker"]), str(again_out))
                  for a in record["argv"]])
    assert (again_out / "ranker.txt").read_bytes() == (outputs["ranker"] / "ranker.txt").read_bytes()
    timing = ("fit_s", "total_s", "machine")
    second = json.loads((again_out / "ranker.json").read_text())
    assert {k: v for k, v in second.items() if k not in timing} == {k: v for k, v in card.items() if k not in timing}

    # Installed as the package's model, its card's figures into the README's generated section.
    root = tmp_path / "checkout"
    (root / "codemem" / "ranking" / "models").mkdir(parents=True)
    (root / "train" / "ranker").mkdir(parents=True)
    (root / "train" / "ranker" / "README.md").write_text(README.read_text())
    written = install_ranker(root)(outputs["ranker"])
    assert LearnedRanker.load(root / "codemem" / "ranking" / "models").model_id == card["model_id"]
    section = (root / "train" / "ranker" / "README.md").read_text()
    assert f"model `{card['model_id']}`" in section and f"at `{tree['commit']}`" in section and len(written) == 3

    decisions = outputs["decisions"] / "decisions.json"
    reader = DecisionReader.load(decisions)
    assert reader.threshold > 0
    trained_on = json.loads(decisions.read_text())["trained_on"]
    assert trained_on["sha256"] == [file_sha256(sentences)] and (trained_on["decisions"], trained_on["others"]) == (40, 40)
    assert (trained_on["commit"], trained_on["clean_tree"]) == (tree["commit"], tree["clean_tree"])

    # Nothing changed: the same keys, every step reused, nothing run.
    capsys.readouterr()
    again = plan(steps, cache, mirrors, tree)
    assert [p.key for p in again] == [p.key for p in planned] and all(p.cached for p in again)
    before = {name: (out / "step.json").stat().st_mtime_ns for name, out in outputs.items()}
    execute(again, cache, mirrors, install=False)
    assert {name: (out / "step.json").stat().st_mtime_ns for name, out in outputs.items()} == before
    assert capsys.readouterr().out.count(": cached") == 3
    # Other data is another key for the steps that read it, and only for those.
    sentences.write_text(sentences.read_text() + json.dumps({"text": "We moved CI to the new runners.", "label": 1}) + "\n")
    changed = plan(steps, cache, mirrors, tree)
    assert [p.cached for p in changed] == [True, True, False]


def test_missing_sources_stop_the_run_before_any_work_and_say_what_to_fetch(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    cache = tmp_path / "cache"
    code = make_train(["--cache", str(cache), "--mirrors", str(tmp_path / "mirrors"), "--allow-dirty", "--no-install"])
    out = capsys.readouterr().out
    assert code == MISSING
    assert f"training cache: {cache}" in out
    assert "fetch github:gruckion/mini-swe-agent  (commit d12a71affd95403b036b2bdbd827349b77bfffb9" in out
    assert "fetch github:kuppireddypravalika/MSWE-validation-dataset  (commit f3788671" in out
    assert "fetch github:sympy/sympy" in out
    assert not cache.exists()  # nothing was run, not even the decision reader that needs no source
