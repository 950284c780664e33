"""The ranker's training data from several agents: a replay per agent and a mixed one, each row
saying which task and which agent, a session filed under the wrong task left out, evaluation
sets refused."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import msgspec
import pytest

from codemem.contract.types import Message
from train.data import EXCLUDED
from train.ranker.build_data import (
    ADD_EVERY_MS,
    FIRST_ADD_MS,
    added_at,
    chosen_agent,
    main,
    mixed,
    own_sessions,
)

AGENTS = ["mini", "vorflux", "openhands"]


def test_the_mixed_replay_picks_each_task_s_agent_by_its_id_alone_and_falls_back_in_turn() -> None:
    ids = [f"repo__repo-{n}" for n in range(600)]
    picks = Counter(chosen_agent(iid, AGENTS)[0] for iid in ids)
    assert set(picks) == set(AGENTS) and min(picks.values()) > 150  # about a third each
    assert [chosen_agent(iid, AGENTS) for iid in reversed(ids)] == [chosen_agent(iid, AGENTS) for iid in ids][::-1]
    first, *others = chosen_agent("repo__repo-7", AGENTS)
    assert sorted([first, *others]) == sorted(AGENTS)
    one = [Message(role="user", content="the task")]
    streams = {a: iter([("repo__repo-7", [] if a == first else one)]) for a in AGENTS}
    assert [(iid, agent) for iid, agent, _ in mixed(streams)] == [("repo__repo-7", others[0])]


def test_a_session_filed_under_another_task_is_left_out() -> None:
    problems = {"a": "Colour bar ticks overlap\r\nwhen the axis is logarithmic", "b": "Cache key collides"}
    sessions = iter([("a", [Message(role="user", content="## Issue\nColour bar ticks overlap\nwhen the axis is logarithmic")]),
                     ("b", [Message(role="user", content="## Issue\nColour bar ticks overlap")])])
    assert [(iid, len(m)) for iid, m in own_sessions("vorflux", sessions, problems)] == [("a", 1), ("b", 0)]


def _session(agent: str, problem: str, f: str) -> list[Message]:
    """A small session in each agent's rendering, editing pkg/`f`.py."""
    if agent == "mini":
        turns = [("user", f"<pr_description>\nConsider the following PR description:\n{problem}\n</pr_description>"),
                 ("assistant", f"THOUGHT: Fix it.\n\n```bash\nsed -i 's/old/new/' pkg/{f}.py && git diff\n```"),
                 ("user", f"<returncode>0</returncode>\n<output>\ndiff --git a/pkg/{f}.py b/pkg/{f}.py\n</output>")]
    else:
        call = {"id": "t1", "type": "function", "function": {"name": "edit_file", "arguments": {
            "filePath": f"pkg/{f}.py", "old_string": "old", "new_string": "new"}}}
        turns = [("user", f"## Issue\n{problem}"), ("assistant", "Fix it.\n" + json.dumps(call)),
                 ("user", json.dumps({"role": "tool", "tool_call_id": "t1", "content": f"Successfully edited pkg/{f}.py"}))]
    return [Message(role=r, content=c) for r, c in turns]  # type: ignore[arg-type]


def test_each_replay_writes_rows_that_name_their_task_and_agent(tmp_path: Path) -> None:
    tasks = [("pkg/a", 1, "Timezone offset lost when serialising naive datetimes", "dates"),
             ("pkg/a", 2, "Colour bar ticks overlap on logarithmic axes", "colorbar"),
             ("pkg/a", 3, "to_iso still drops the timezone offset of naive datetimes", "dates"),
             ("pkg/b", 3, "Cache key collides for unicode paths", "cache")]
    data = tmp_path / "swe-verified-reuse"
    data.mkdir()
    rows = [{"instance_id": f"{repo.replace('/', '__')}-{n}", "repo": repo, "number": n, "problem_statement": p}
            for repo, n, p, _ in tasks]
    (data / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (data / "links.json").write_text(json.dumps([{"query": "pkg__a-3", "same_file": ["pkg__a-1"],
                                                  "same_function": ["pkg__a-1"]}]))
    for agent in ("mini", "vorflux"):
        folder = tmp_path / "sessions" / agent
        folder.mkdir(parents=True)
        for row, (_, _, problem, f) in zip(rows, tasks, strict=True):
            if agent == "vorflux" and row["instance_id"] == "pkg__a-2":
                continue  # the run lacks it
            messages = _session(agent, problem, f)
            (folder / f"{row['instance_id']}.jsonl").write_bytes(b"".join(msgspec.json.encode(m) + b"\n" for m in messages))
    out = tmp_path / "signals"
    main(["--data", str(data), "--agent", f"mini={tmp_path / 'sessions' / 'mini'}",
          "--agent", f"vorflux={tmp_path / 'sessions' / 'vorflux'}", "--replays", "vorflux,mixed", "--out", str(out)])

    vorflux = [json.loads(line) for line in (out / "vorflux" / "queries.jsonl").read_text().splitlines()]
    # pkg__a-1 opens its repository; pkg__b-3 is the first of its own: neither is searched.
    assert [q["instance_id"] for q in vorflux] == ["pkg__a-2", "pkg__a-3"]
    assert vorflux[0]["agent"] is None  # searched, and not added: vorflux has no session of it
    assert vorflux[1]["agent"] == "vorflux" and vorflux[1]["agents"] == {"pkg__a-1": "vorflux", "pkg__b-3": "vorflux"}
    assert vorflux[1]["labels"] == {"pkg__a-1": 2} and vorflux[1]["replay"] == "vorflux"
    assert set(vorflux[1]["signals"]["cosine"]) == set(vorflux[1]["memory"]) == {"pkg__a-1", "pkg__b-3"}

    queries = [json.loads(line) for line in (out / "mixed" / "queries.jsonl").read_text().splitlines()]
    cards = {c["id"]: c for c in map(json.loads, (out / "mixed" / "cards.jsonl").read_text().splitlines())}
    assert set(cards) == {r["instance_id"] for r in rows}  # the mixed replay has a session of every task
    for q in queries:
        assert q["query"] == q["instance_id"] and q["replay"] == "mixed"
        assert q["agent"] == cards[q["instance_id"]]["agent"]
        assert q["agents"] == {k: cards[k]["agent"] for k in q["memory"]}
    # Each task's agent is the hash's pick, or the next where its run lacks the task (pkg__a-2).
    assert {k: c["agent"] for k, c in cards.items()} == {"pkg__a-1": "mini", "pkg__a-2": "mini", "pkg__a-3": "mini",
                                                          "pkg__b-3": "vorflux"}
    assert chosen_agent("pkg__a-2", ["mini", "vorflux"]) == ["vorflux", "mini"]
    assert all(c["instance_id"] == c["id"] and c["text"] for c in cards.values())
    timings = json.loads((out / "mixed" / "timings.json").read_text())
    assert sum(timings["sessions"].values()) == 4 and set(timings["sources"]) == {"mini", "vorflux"}


def test_an_evaluation_set_is_refused_as_an_agent_s_sessions(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="never training data"):
        main(["--agent", f"mini={tmp_path / EXCLUDED[0]}", "--out", str(tmp_path / "out")])


def test_an_agent_run_is_read_at_the_commit_its_argument_pins() -> None:
    from train.ranker.build_data import parse_agent

    assert parse_agent("mini=/m/gruckion+mini-swe-agent/repo@d12a71a") == ("mini", (Path("/m/gruckion+mini-swe-agent/repo"), "d12a71a"))
    assert parse_agent("vorflux=/data/sessions/vorflux") == ("vorflux", (Path("/data/sessions/vorflux"), "HEAD"))
    assert parse_agent("mini=/home/me@work/sessions") == ("mini", (Path("/home/me@work/sessions"), "HEAD"))


def test_a_replay_s_sessions_are_dated_in_the_order_it_added_them() -> None:
    # Each record is written just before its own task is Added; a repository's first task is
    # Added without a record, before the first record whose memory holds it.
    records = [{"query": "a-2", "memory": ["a-1"]}, {"query": "b-2", "memory": ["a-1", "a-2", "b-1"]},
               {"query": "a-3", "memory": ["a-1", "a-2", "b-1", "b-2"]}]
    step = {iid: (ms - FIRST_ADD_MS) / ADD_EVERY_MS for iid, ms in added_at(records).items()}
    assert step == {"a-1": -0.25, "a-2": 0.5, "b-1": 0.75, "b-2": 1.5, "a-3": 2.5}
    assert sorted(step, key=lambda iid: step[iid]) == ["a-1", "a-2", "b-1", "b-2", "a-3"]
