"""A replay that Adds each session whole (one request, one build of its card) gives the relevance
model the same training rows as one that Adds it in the evaluation's 34-message chunks (a build
per chunk, the last ones deferred past 400 messages): the same queries, candidates, labels and
feature vectors. And a replay gives the same data twice (its compaction rounds run at fixed
points, not on a clock)."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from codemem.contract.types import Message
from train.ranker import build_data
from train.ranker.build_data import CHUNK, main
from train.ranker.replay_diff import compare

# Two repositories; each task edits one function of one file, and some come back to earlier ones.
TASKS = {
    "pkg/a": [("Timezone offset lost when serialising naive datetimes", "dates", "to_iso", 9),
              ("Colour bar ticks overlap on logarithmic axes", "colorbar", "tick_locator", 75),
              ("to_iso still drops the offset of naive datetimes after the fix", "dates", "to_iso", 430),
              ("Legend hides the data when placed at best", "legend", "place_legend", 41),
              ("Log axis tick_locator crashes on negative limits", "colorbar", "tick_locator", 68)],
    "pkg/b": [("Cache key collides for unicode paths", "cache", "resolve_cache_key", 120),
              ("CSV reader drops the last row without a newline", "csv", "read_rows", 35),
              ("resolve_cache_key ignores the user's cache directory", "cache", "resolve_cache_key", 12)],
}


def _session(problem: str, f: str, g: str, n: int, seed: int) -> list[Message]:
    """A mini-swe-agent session of `n` messages: the task, then turns that read, run the tests,
    hit an error and edit pkg/`f`.py (each turn's output differs, as a real session's does)."""
    turns = [("user", f"<pr_description>\nConsider the following PR description:\n{problem}\n</pr_description>")]
    for i in range((n - 1) // 2):
        step = (seed + i) % 4
        if step == 0:
            command, output = f"grep -n {g} pkg/{f}.py", f"{12 + i}:def {g}(value, option_{i}):"
        elif step == 1:
            command, output = f"python -m pytest tests/test_{f}.py -k {g}_{i}", \
                f"FAILED tests/test_{f}.py::test_{g}_{i} - ValueError: bad value {i} in {g}"
        elif step == 2:
            command, output = f"sed -n '{i},{i + 20}p' pkg/{f}.py", f"    return helper_{i}(value)  # {problem[:20]}"
        else:
            command, output = f"sed -i 's/helper_{i}/fixed_{i}/' pkg/{f}.py && git diff", \
                f"diff --git a/pkg/{f}.py b/pkg/{f}.py\n@@ -{i},2 +{i},2 @@ def {g}(value):\n-    helper_{i}\n+    fixed_{i}"
        turns += [("assistant", f"THOUGHT: step {i} on {g}.\n\n```bash\n{command}\n```"),
                  ("user", f"<returncode>{step % 2}</returncode>\n<output>\n{output}\n</output>")]
    turns += [("assistant", f"THOUGHT: Done with {g}.\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```")][: n - len(turns)]
    return [Message(role=r, content=c) for r, c in turns]  # type: ignore[arg-type]


def _fixture(root: Path) -> tuple[Path, Path]:
    """A `swe-verified-reuse`-shaped task folder, its links, and the sessions as `--export` writes them."""
    data, sessions = root / "swe-verified-reuse", root / "sessions" / "mini"
    data.mkdir()
    sessions.mkdir(parents=True)
    tasks, links = [], []
    for repo, rows in TASKS.items():
        seen: dict[str, str] = {}
        for n, (problem, f, g, size) in enumerate(rows, 1):
            iid = f"{repo.replace('/', '__')}-{n}"
            tasks.append({"instance_id": iid, "repo": repo, "number": n, "problem_statement": problem})
            if f in seen:
                links.append({"query": iid, "same_file": [seen[f]], "same_function": [seen[f]]})
            seen.setdefault(f, iid)
            messages = _session(problem, f, g, size, n)
            (sessions / f"{iid}.jsonl").write_bytes(b"".join(msgspec.json.encode(m) + b"\n" for m in messages))
    (data / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    (data / "links.json").write_text(json.dumps(links))
    return data, sessions


def test_whole_sessions_give_the_training_rows_that_chunked_adds_give_and_the_same_data_twice(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data, sessions = _fixture(tmp_path)
    monkeypatch.setattr(build_data, "COMPACT_EVERY", 2)  # compaction rounds between the fixture's Searches too

    def replay(out: str, *extra: str) -> Path:
        main(["--data", str(data), "--agent", f"mini={sessions}", "--replays", "mini", "--out", str(tmp_path / out),
              *extra])
        return tmp_path / out / "mini"

    chunked, whole, again = replay("chunked", "--chunk", str(CHUNK)), replay("whole"), replay("again")
    diff = compare(chunked, whole)
    assert diff.queries == 6 and diff.same(), diff  # each repository's first task is not searched
    assert not diff.features  # not even float noise: the same signals in the same order
    labels = [json.loads(line)["labels"] for line in (whole / "queries.jsonl").read_text().splitlines()]
    assert labels.count({}) == 3 and {"pkg__a-1": 2} in labels  # three queries with a related session in memory
    assert (whole / "queries.jsonl").read_bytes() == (again / "queries.jsonl").read_bytes()
    assert (whole / "cards.jsonl").read_bytes() == (again / "cards.jsonl").read_bytes()
    timings = [msgspec.json.decode((d.parent / "mini" / "timings.json").read_bytes()) for d in (chunked, whole)]
    assert timings[0]["adds"] > timings[1]["adds"] == 8
