"""Each rendering family's messages become the same typed events."""

from __future__ import annotations

import json

import pytest

from codemem.experience import recognise_events
from codemem.experience.recognising.events import (
    ReasoningEvent,
    TextEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from tests.experience.helpers import load_family


def _calls(events: list) -> list[ToolCallEvent]:
    return [e for e in events if isinstance(e, ToolCallEvent)]


def test_codemem_claude_code_rendering() -> None:
    events = recognise_events(
        'Tool call Edit {"file_path":"a.py","old_string":"x","new_string":"y"}', "assistant"
    )
    assert events == [
        ToolCallEvent("Edit", {"file_path": "a.py", "old_string": "x", "new_string": "y"})
    ]
    result = recognise_events(
        "Tool result (Bash, error):\n     1→keep indent\nThought: inside output", "user"
    )
    assert result == [ToolResultEvent("     1→keep indent\nThought: inside output", "Bash", True)]
    assert recognise_events("[thinking] The bug is X.", "assistant") == [
        ReasoningEvent("The bug is X.")
    ]


def test_json_blobs() -> None:
    messages, _ = load_family("json_blobs")
    call = recognise_events(messages[1].text, "assistant")
    assert call == [
        TextEvent("Reading the model."),
        ToolCallEvent("read_file", {"path": "app/models.py"}),
    ]
    assert _calls(recognise_events(messages[3].text, "assistant"))[0].name == "edit_file"
    assert recognise_events(messages[2].text, "user")[0].name == "read_file"
    failed = recognise_events(messages[6].text, "user")[0]
    assert isinstance(failed, ToolResultEvent) and failed.is_error
    anthropic = json.dumps(
        [
            {"type": "thinking", "thinking": "hmm"},
            {"type": "tool_use", "id": "1", "name": "Bash", "input": {"command": "ls"}},
        ]
    )
    assert recognise_events(anthropic, "assistant") == [
        ReasoningEvent("hmm"),
        ToolCallEvent("Bash", {"command": "ls"}),
    ]
    legacy = json.dumps(
        {"role": "assistant", "function_call": {"name": "run", "arguments": '{"cmd": "make"}'}}
    )
    assert recognise_events(legacy, "assistant") == [ToolCallEvent("run", {"cmd": "make"})]


def test_json_that_is_just_data_stays_text() -> None:
    assert recognise_events('{"title": "bug", "body": "crash"}', "user") == [
        TextEvent('{"title": "bug", "body": "crash"}')
    ]


def test_line_markers() -> None:
    messages, _ = load_family("markers")
    react = recognise_events(messages[1].text, "assistant")
    assert react == [
        ReasoningEvent("I should check the config loader."),
        ToolCallEvent("read_file", {"path": "cfg/loader.py"}),
    ]
    assert recognise_events(messages[2].text, "user") == [
        ToolResultEvent("def load(path):\n    return open(path).read()")
    ]
    tool_use = recognise_events(messages[3].text, "assistant")
    assert isinstance(tool_use[0], TextEvent) and tool_use[1].name == "Edit"
    assert recognise_events("Tool: bash\ncommand: ls -la\ntimeout: 5", "assistant") == [
        ToolCallEvent("bash", {"command": "ls -la", "timeout": "5"})
    ]


def test_openhands_tags() -> None:
    messages, _ = load_family("openhands")
    events = recognise_events(messages[3].text, "assistant")
    assert isinstance(events[0], TextEvent)
    call = events[1]
    assert call.name == "str_replace_editor" and call.args["command"] == "str_replace"
    assert call.args["new_str"].startswith("    if value is None:")
    result = recognise_events(messages[6].text, "user")
    assert result[0] == ToolResultEvent(result[0].text, "execute_bash", False)
    assert "4 passed" in result[0].text


def test_xml_invoke_and_mini_swe_results() -> None:
    messages, _ = load_family("invoke_xml")
    call = _calls(recognise_events(messages[5].text, "assistant"))[0]
    assert (
        call.name == "str_replace_based_edit_tool"
        and call.args["file_text"] == "def helper():\n    return 1"
    )
    assert recognise_events(messages[8].text, "user") == [ToolResultEvent("", None, False)]
    assert recognise_events("<returncode>2</returncode>\n<output>\nboom\n</output>", "user") == [
        ToolResultEvent("boom", None, True)
    ]
    wrapped = recognise_events(
        '<tool_call>{"name": "grep", "arguments": {"pattern": "x"}}</tool_call>', "assistant"
    )
    assert wrapped == [ToolCallEvent("grep", {"pattern": "x"})]


def test_swe_agent_commands_and_observations() -> None:
    messages, _ = load_family("swe_agent")
    assert _calls(recognise_events(messages[1].text, "assistant")) == [
        ToolCallEvent("open", {"path": "src/calc.py"})
    ]
    edit = _calls(recognise_events(messages[3].text, "assistant"))[0]
    assert edit == ToolCallEvent("edit", {"range": "3:3", "replacement": "        return a + b\n"})
    observation = recognise_events(messages[2].text, "user")
    assert len(observation) == 1 and isinstance(observation[0], ToolResultEvent)


def test_shell_prompts_and_diff_blocks() -> None:
    messages, _ = load_family("shell_prose")
    events = recognise_events(messages[1].text, "assistant")
    assert events[1:] == [
        ToolCallEvent("bash", {"command": "pytest -q tests/test_x.py"}),
        ToolResultEvent("F\n1 failed in 0.10s", "bash"),
    ]
    patch = _calls(recognise_events(messages[2].text, "assistant"))[0]
    assert patch.name == "apply_patch" and "+    return 2" in patch.args["patch"]


def test_fence_in_the_middle_of_prose_is_not_a_command() -> None:
    text = "Run this:\n```bash\npytest\n```\nand it should pass."
    assert _calls(recognise_events(text, "assistant")) == []


def test_codex_apply_patch_argv() -> None:
    messages, _ = load_family("codex_patch")
    call = _calls(recognise_events(messages[1].text, "assistant"))[0]
    assert call.name == "shell" and call.args["command"][0] == "apply_patch"


@pytest.mark.parametrize("text", ["just words", "I fixed it.\nAll good."])
def test_anything_else_is_text(text: str) -> None:
    assert recognise_events(text, "assistant") == [TextEvent(text)]
