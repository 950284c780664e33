"""The public agent runs read as a Coding-track client would send them: the agent's own rendering
of its tool calls and results, the task without the harness's instructions, and nothing of the
sessions the agent did not itself hold (sub-agents' commands, the harness's bookkeeping)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from train.ranker.agents import (
    Run,
    mini_messages,
    openhands_messages,
    read_sessions,
    vorflux_messages,
)

FIXTURES = Path(__file__).parent / "fixtures" / "agents"
ISSUE = "Timezone offset lost when serialising naive datetimes\r\nto_iso drops the offset."
EDIT = {"filePath": "/code/pkg/pkg/pkg/dates.py", "old_string": "value.isoformat()",
        "new_string": "value.astimezone().isoformat()"}


def _fixture(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def _lines(content: str) -> list[Any]:
    """A message's lines, JSON ones decoded."""
    return [json.loads(line) if line.startswith("{") else line for line in content.split("\n")]


def test_mini_swe_agent_keeps_its_turns_and_drops_the_system_prompt_and_the_rules() -> None:
    messages = mini_messages(_fixture("mini"))
    assert [m.role for m in messages] == ["user", "assistant", "user", "assistant", "assistant"]
    assert messages[0].content == f"<pr_description>\nConsider the following PR description:\n{ISSUE}\n</pr_description>"
    assert messages[1].content.startswith("THOUGHT: Find to_iso.\n\n```bash\ngrep -n to_iso")
    assert messages[2].content == "<returncode>0</returncode>\n<output>\n12:def to_iso(value):\n</output>"


def test_vorflux_keeps_the_main_agent_s_typed_calls_and_the_results_that_answer_them() -> None:
    messages = vorflux_messages(_fixture("vorflux"))
    assert [m.role for m in messages] == ["user", "assistant", "user", "assistant", "user", "assistant", "user",
                                          "assistant"]
    # The issue alone: no setup, install, approach, rules or submission steps.
    assert messages[0].content == f"## Issue\n{ISSUE}"
    # The model's text, then its calls as it emitted them (arguments decoded once).
    assert _lines(messages[1].content) == [
        "Let me look at the code.",
        {"id": "toolu_1", "type": "function",
         "function": {"name": "bash_execute", "arguments": {"command": "grep -n to_iso pkg/dates.py"}}},
        {"id": "toolu_2", "type": "function", "function": {"name": "add_task", "arguments": {"prompt": "explore dates"}}}]
    # A sub-agent's `ls pkg/` answers no call of the main agent: left out. The grep's result is
    # the tool message of its call.
    assert json.loads(messages[2].content) == {"role": "tool", "tool_call_id": "toolu_1", "content": {
        "stdout": "12:def to_iso(value):", "stderr": "", "exitCode": 0, "outputExceededThreshold": False}}
    # The harness renamed `file_path` to `filePath` in its record: matched by the values.
    assert _lines(messages[3].content)[0]["function"]["name"] == "read"
    assert json.loads(messages[4].content) == {"role": "tool", "tool_call_id": "toolu_3",
                                               "content": "    12\u2192def to_iso(value):\n    13\u2192    return value.isoformat()"}
    assert _lines(messages[5].content)[1]["function"] == {"name": "edit_file", "arguments": EDIT}
    assert json.loads(messages[6].content)["tool_call_id"] == "toolu_4"
    # The final answer; the judge's review and the harness's `/memory` bookkeeping are not the session.
    assert messages[7].content.startswith("```diff\n-    return value.isoformat()")
    assert not any("/memory" in m.content or "analyzing an AI assistant" in m.content for m in messages)


def test_vorflux_runs_exported_without_their_calls_take_them_from_the_execution_records() -> None:
    messages = vorflux_messages(_fixture("vorflux_unexported_calls"))
    assert [m.role for m in messages] == ["user", "assistant", "user", "assistant", "user", "assistant"]
    assert messages[0].content == f"### Problem Statement\n{ISSUE}"
    assert _lines(messages[1].content) == ["Let me look.", {"type": "function", "function": {
        "name": "bash_execute", "arguments": {"command": "grep -n to_iso pkg/dates.py"}}}]
    assert json.loads(messages[2].content)["content"]["stdout"] == "12:def to_iso(value):"
    assert _lines(messages[3].content) == [{"type": "function", "function": {"name": "edit_file", "arguments": EDIT}}]
    assert json.loads(messages[4].content) == {"role": "tool", "content": "Successfully edited file: /code/pkg/pkg/pkg/dates.py"}
    # What ran after the agent's last word is the harness's.
    assert messages[5].content == "Done: the offset is kept." and "/memory" not in "".join(m.content for m in messages)


def test_openhands_keeps_its_text_function_calls_and_execution_results_and_its_final_answer() -> None:
    messages = openhands_messages(_fixture("openhands"))
    assert [m.role for m in messages] == ["user", "assistant", "user", "assistant", "user", "assistant"]
    assert messages[0].content == ("<uploaded_files>\n/workspace/pkg__pkg__1.0\n</uploaded_files>\nI've uploaded a python "
                                   "code repository in the directory pkg__pkg__1.0. Consider the following issue "
                                   f"description:\n\n<issue_description>\n{ISSUE}\n</issue_description>")
    assert "<function=execute_bash>\n<parameter=command>grep -rn to_iso" in messages[1].content
    assert messages[2].content.startswith("EXECUTION RESULT of [execute_bash]:\n")
    assert messages[4].content.startswith("EXECUTION RESULT of [str_replace_editor]:")  # from text parts
    assert messages[5].content.startswith("The offset is kept now.")
    assert not any("running example" in m.content or "native tool calls" in m.content for m in messages)


@pytest.mark.parametrize("reader,fixture", [(mini_messages, "mini"), (vorflux_messages, "vorflux"),
                                            (openhands_messages, "openhands")])
def test_a_first_message_without_the_task_is_a_clear_error(reader: Any, fixture: str) -> None:
    run = _fixture(fixture)
    text = json.dumps(run).replace("pr_description", "prdesc").replace("## Issue", "## Ticket") \
        .replace("uploaded_files", "files")
    with pytest.raises(ValueError, match="no task start"):
        reader(json.loads(text))


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_sessions_are_read_from_a_run_s_git_directory_and_a_missing_one_yields_none(tmp_path: Path) -> None:
    repo = tmp_path / "run"
    for iid in ("pkg__pkg-1", "pkg__pkg-2"):
        folder = repo / "evaluation" / "trajs" / iid
        folder.mkdir(parents=True)
        (folder / "Claude-1743405761.json").write_text((FIXTURES / "openhands.json").read_text())
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "runs")
    run = Run("openhands", "OpenHands", "someone/run", "evaluation/trajs", openhands_messages, "{iid}/")
    got = dict(read_sessions(run, repo / ".git", ["pkg__pkg-2", "pkg__pkg-9", "pkg__pkg-1"]))
    assert list(got) == ["pkg__pkg-2", "pkg__pkg-9", "pkg__pkg-1"]
    assert got["pkg__pkg-9"] == [] and len(got["pkg__pkg-1"]) == len(got["pkg__pkg-2"]) == 6
    # A run pinned to a commit reads that commit's trajectories, whatever the mirror's HEAD holds now.
    pinned = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, capture_output=True,
                            text=True).stdout.strip()
    _git(repo, "rm", "-q", "-r", "evaluation/trajs/pkg__pkg-1")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "drop one")
    assert dict(read_sessions(run, repo / ".git", ["pkg__pkg-1"]))["pkg__pkg-1"] == []
    assert len(dict(read_sessions(run, repo / ".git", ["pkg__pkg-1"], pinned[:7]))["pkg__pkg-1"]) == 6
