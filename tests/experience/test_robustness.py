"""Garbage in never raises, and what comes out stays bounded."""

from __future__ import annotations

import gc
import json
import random
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codemem.contract.types import ImagePart, ImageURL, Message, TextPart
from codemem.experience import build_experience, recognise_events

GARBAGE = [
    "",
    "   \n\t ",
    "\x00\x01\x02\xff binary \x00 junk \ufffd",
    bytes(range(256)).decode("latin-1"),
    "x" * 1_000_000,
    'Tool call Edit {"file_path": "a.py", "old_string": ',
    "Tool call Bash {not json at all",
    '{"tool": "Edit", "input": {"file_path": ',
    '{"tool_calls": [{"function": {"name": "x", "arguments": "{bad"}}]}',
    '[{"type": "tool_use"}]',
    "<function=str_replace_editor>\n<parameter=command>str_replace",
    '<invoke name="x"><parameter name="p">unclosed',
    "```\nedit 3:1\nnever ends",
    "Tool result (Bash):\n" + "diff --git a/x b/x\n@@ -1,1 +1,1 @@\n" * 2000,
    "*** Begin Patch\n*** Update File: \n@@\n-",
    "[" * 5000 + "]" * 5000,
    "Traceback (most recent call last):\n" * 3000,
    "Tool call Edit " + json.dumps({"file_path": 7, "old_string": None, "new_string": ["x"]}),
    "Tool call MultiEdit "
    + json.dumps({"file_path": "a.py", "edits": [1, None, {"old_string": 2}]}),
    "Tool call Bash " + json.dumps({"command": ["rm", "-rf", "/"]}),
]


@pytest.mark.parametrize("text", GARBAGE, ids=range(len(GARBAGE)))
def test_garbage_messages_never_raise(text: str) -> None:
    for role in ("user", "assistant"):
        recognise_events(text, role)
    experience = build_experience(
        [Message(role="user", content=text), Message(role="assistant", content=text)]
    )
    assert len(experience.card.text) <= 4000
    assert all(len(step.text) <= 1600 for step in experience.steps)


def test_a_whole_session_of_garbage() -> None:
    rng = random.Random(7)
    messages = [
        Message(role=rng.choice(["user", "assistant"]), content=rng.choice(GARBAGE))
        for _ in range(60)
    ]
    build_experience(messages)


def test_empty_and_non_text_content() -> None:
    assert build_experience([]).card.task == ""
    image = Message(role="user", content=[ImagePart(image_url=ImageURL(url="data:,"))])
    parts = Message(role="assistant", content=[TextPart(text='Tool call Bash {"command": "ls"}')])
    build_experience([image, parts])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["user", "assistant"]),
            st.one_of(
                st.text(max_size=300),
                st.sampled_from(GARBAGE[5:13]).map(lambda s: s + "\n" + "$ ls\n"),
            ),
        )
    ),
    st.integers(min_value=0, max_value=5000),
)
def test_arbitrary_sessions_never_raise(turns: list[tuple[str, str]], limit: int) -> None:
    experience = build_experience([Message(role=r, content=t) for r, t in turns], max_chars=limit)
    assert len(experience.card.text) <= limit


PATHOLOGICAL = [
    "\n" * 1_000_000,
    "```a\n" * 10_000,
    "<function=x>" * 10_000,
    "<tool_result>" * 10_000,
    '<invoke name="x"><parameter name="p">' * 10_000,
    "Traceback (most recent call last):\n" * 10_000,
    "*** Begin Patch\n" * 10_000,
    '{"tool": [\n' * 10_000,
    'Tool call Bash {"command": [\n' * 10_000,
    "cat > f.py << EOF\n" * 10_000,
    ". " + "\n" * 10_000 + "x",
    "   1 passing\n" + " " * 10_000 + "\n" * 10_000,
]


def _build_cpu_seconds(text: str) -> float:
    """CPU seconds of this thread to build every kind of session around `text`: the thread's
    own clock, so a loaded machine does not change it, with the garbage collector held off so
    that a collection of the whole test session's heap is not billed to this input."""
    gc.collect()
    gc.disable()
    try:
        return _timed_build(text)
    finally:
        gc.enable()


def _timed_build(text: str) -> float:
    started = time.thread_time()
    for role in ("user", "assistant"):
        build_experience([Message(role="user", content="task"), Message(role=role, content=text)])
    build_experience(
        [
            Message(role="user", content="t"),
            Message(role="assistant", content='Tool call Bash {"command": "python t.py"}'),
            Message(role="user", content="Tool result (Bash):\n" + text),
            Message(role="assistant", content="Tool call Bash " + json.dumps({"command": text})),
            Message(
                role="assistant",
                content="Tool call Write " + json.dumps({"file_path": "a.py", "content": text}),
            ),
        ]
    )
    return time.thread_time() - started


@pytest.mark.parametrize("text", PATHOLOGICAL, ids=range(len(PATHOLOGICAL)))
def test_pathological_text_stays_linear(text: str) -> None:
    """Four times the text costs about four times the work, not sixteen: a quadratic scan or a
    backtracking pattern shows as a ratio far above 4 (the quarter-second allows for the
    fixed cost and clock granularity of small inputs). Each is the better of two builds, so a
    one-off cost (a lazy import, a cache filled) is not taken for growth."""
    quarter = min(_build_cpu_seconds(text[: len(text) // 4]) for _ in range(2))
    whole = min(_build_cpu_seconds(text) for _ in range(2))
    assert whole <= 8 * quarter + 0.25, f"{quarter:.3f} s for a quarter, {whole:.3f} s for the whole"
