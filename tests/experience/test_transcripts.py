from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

from codemem.importers.claude_code import (
    iter_transcripts_from_tar,
    load_claude_code_jsonl,
    render_claude_code_events,
)
from tests.experience.helpers import FIXTURES

SESSION = FIXTURES / "claude_code_session.jsonl"


def test_renders_one_message_per_conversational_event() -> None:
    transcript = load_claude_code_jsonl(SESSION)
    assert transcript.session_id == "sess-1"
    assert transcript.cwd == "/home/dev/work"
    assert transcript.skipped_lines == 1  # the truncated last line
    texts = [m.text for m in transcript.messages]
    assert len(texts) == 16
    assert texts[0].startswith("Square.area returns twice")
    assert texts[1].startswith("[thinking] The bug is")
    assert texts[3] == 'Tool call Read {"file_path":"/home/dev/work/testbed/pkg/shapes.py"}'
    assert texts[4].startswith("Tool result (Read):\n     1→class Square:")
    assert [m.role for m in transcript.messages[:5]] == [
        "user",
        "assistant",
        "assistant",
        "assistant",
        "user",
    ]


def test_skips_bookkeeping_sidechain_and_meta_events() -> None:
    joined = "\n".join(m.text for m in load_claude_code_jsonl(SESSION).messages)
    assert "Square area fix" not in joined  # summary
    assert "sub-agent prompt" not in joined  # sidechain
    assert "/cost" not in joined  # meta
    assert "system-reminder" not in joined and "malware" not in joined


def test_timestamps_are_unix_ms() -> None:
    first = load_claude_code_jsonl(SESSION).messages[0]
    assert first.timestamp == 1735787040000


def test_tool_results_name_their_tool_and_mark_errors() -> None:
    lines = [
        json.dumps(
            {
                "type": "assistant",
                "message": {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": "t1",
                            "name": "Bash",
                            "input": {"command": "false"},
                        }
                    ],
                },
            }
        ),
        json.dumps(
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "t1",
                            "is_error": True,
                            "content": [
                                {"type": "text", "text": "Exit code 1"},
                                {"type": "image", "source": {}},
                            ],
                        }
                    ],
                },
            }
        ),
        json.dumps(
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "unknown", "content": "orphan"}
                    ],
                },
            }
        ),
    ]
    messages = render_claude_code_events(lines).messages
    assert messages[1].text == "Tool result (Bash, error):\nExit code 1\n[image]"
    assert messages[2].text == "Tool result:\norphan"


def test_never_raises_on_bad_lines() -> None:
    lines = [
        "",
        "not json",
        "[1, 2]",
        '{"type": "user", "message": 7}',
        b"\xff\xfe",
        json.dumps(
            {"type": "assistant", "message": {"role": "assistant", "content": [None, 3, {}]}}
        ),
    ]
    transcript = render_claude_code_events(lines)
    assert transcript.messages == []
    assert transcript.skipped_lines == 3


def test_streams_members_from_a_compressed_tar(tmp_path: Path) -> None:
    archive = tmp_path / "t.tar.xz"
    data = SESSION.read_bytes()
    with tarfile.open(archive, "w:xz") as tar:
        for name in ("traj/a.jsonl", "traj/README.md", "traj/b.jsonl"):
            info = tarfile.TarInfo(name)
            payload = data if name.endswith(".jsonl") else b"# readme"
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
    found = list(iter_transcripts_from_tar(archive))
    assert [name for name, _ in found] == ["traj/a.jsonl", "traj/b.jsonl"]
    assert all(len(t.messages) == 16 for _, t in found)
