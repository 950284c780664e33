"""Sessions in, cards out: every rendering family, a Claude Code session, scratch rules."""

from __future__ import annotations

import json

import pytest

from codemem.contract.types import Message
from codemem.experience import build_experience
from codemem.importers.claude_code import load_claude_code_jsonl
from tests.experience.helpers import FAMILIES, FIXTURES, load_family

SESSION = FIXTURES / "claude_code_session.jsonl"


def _call(name: str, **args: object) -> Message:
    return Message(role="assistant", content=f"Tool call {name} {json.dumps(args)}")


def _result(name: str, text: str) -> Message:
    return Message(role="user", content=f"Tool result ({name}):\n{text}")


@pytest.mark.parametrize("family", FAMILIES)
def test_each_rendering_family_yields_its_card(family: str) -> None:
    messages, expect = load_family(family)
    card = build_experience(messages).card
    for field in ("edited_files", "edited_symbols", "tests_passed", "errors"):
        if field in expect:
            assert getattr(card, field) == expect[field], field
    if "root_cause" in expect:
        assert any(expect["root_cause"] in r for r in card.root_cause)
    assert card.task == messages[0].text


def test_claude_code_session_card() -> None:
    experience = build_experience(load_claude_code_jsonl(SESSION).messages)
    card = experience.card
    assert card.edited_files == ["pkg/shapes.py"]  # the git diff's files; the scratch script is not
    assert card.edited_symbols == ["Square.area"]
    assert card.tests_passed is True
    assert card.final_diff.startswith("diff --git a/pkg/shapes.py")
    assert (
        card.root_cause[0] == "The bug is that area multiplies by 2 instead of squaring the side."
    )
    assert card.outcome.startswith("Edited pkg/shapes.py; final diff +1/-1; final test run passed")
    assert card.text.startswith("## Task\nSquare.area returns twice")
    assert "## Final diff" in card.text
    edits = [s for s in experience.steps if s.kind == "edit"]
    assert [(s.files, s.symbols) for s in edits] == [(["pkg/shapes.py"], ["Square.area"])]
    assert "@@ -6,1 +6,1 @@" in edits[0].text  # located in the file the agent read
    assert [s.kind for s in experience.steps].count("test_run") == 1
    assert [s.position for s in experience.steps] == sorted(s.position for s in experience.steps)
    assert "pkg/shapes.py" in experience.terms and "square.area" in experience.terms


def test_without_a_git_diff_the_edits_decide_and_scratch_is_dropped() -> None:
    messages = [m for m in load_claude_code_jsonl(SESSION).messages if "diff" not in m.text]
    card = build_experience(messages).card
    assert card.edited_files == ["pkg/shapes.py"]
    assert card.final_diff.startswith("--- a/pkg/shapes.py\n+++ b/pkg/shapes.py\n@@ -6,1 +6,1 @@")


def test_edit_symbols_come_from_the_file_seen_in_a_read() -> None:
    source = "class A:\n    x = 1\n\n    def f(self):\n        return 1\n"
    numbered = "".join(f"{i:6d}→{line}\n" for i, line in enumerate(source.split("\n"), 1))
    messages = [
        Message(role="user", content="f should return 2"),
        _call("Read", file_path="/repo/a.py"),
        _result("Read", numbered),
        _call("Edit", file_path="/repo/a.py", old_string="return 1", new_string="return 2"),
        _result("Edit", "The file /repo/a.py has been updated."),
    ]
    assert build_experience(messages).card.edited_symbols == ["A.f"]
    unread = [messages[0], *messages[3:]]
    assert build_experience(unread).card.edited_symbols == []  # no file seen, no def in the edit


@pytest.mark.parametrize(
    ("scratch", "why"),
    [
        ("/repo/reproduce_bug.py", "top-level reproduction script"),
        ("/repo/pkg/tmp_check.py", "created then deleted"),
        ("/elsewhere/notes.py", "outside the checkout"),
    ],
)
def test_scratch_files_do_not_count(scratch: str, why: str) -> None:
    messages = [
        Message(role="user", content="fix g"),
        _call("Read", file_path="/repo/pkg/mod.py"),
        _result("Read", "     1→def g():\n     2→    pass"),
        _call("Write", file_path=scratch, content="print(1)\n"),
        _result("Write", "File created"),
        _call(
            "Edit", file_path="/repo/pkg/mod.py", old_string="    pass", new_string="    return 0"
        ),
        _result("Edit", "ok"),
        _call("Bash", command=f"rm {scratch}" if "tmp_check" in scratch else "echo done"),
        _result("Bash", ""),
    ]
    assert build_experience(messages).card.edited_files == ["pkg/mod.py"], why


def test_an_edit_undone_in_place_does_not_count() -> None:
    messages = [
        Message(role="user", content="fix g"),
        _call("Read", file_path="/repo/pkg/mod.py"),
        _result("Read", "     1→def g():\n     2→    pass"),
        _call("Read", file_path="/repo/pkg/other.py"),
        _result("Read", "     1→X = 1"),
        _call("Edit", file_path="/repo/pkg/other.py", old_string="X = 1", new_string="X = 2"),
        _result("Edit", "ok"),
        _call("Edit", file_path="/repo/pkg/other.py", old_string="X = 2", new_string="X = 1"),
        _result("Edit", "ok"),
        _call(
            "Edit", file_path="/repo/pkg/mod.py", old_string="    pass", new_string="    return 0"
        ),
        _result("Edit", "ok"),
    ]
    assert build_experience(messages).card.edited_files == ["pkg/mod.py"]


def test_a_failed_edit_does_not_count() -> None:
    messages = [
        Message(role="user", content="fix"),
        _call("Edit", file_path="/repo/a.py", old_string="x", new_string="y"),
        Message(
            role="user",
            content="Tool result (Edit, error):\n<tool_use_error>String to replace not found",
        ),
    ]
    assert build_experience(messages).card.edited_files == []


def test_final_git_diff_wins_over_the_edits() -> None:
    patch = "diff --git a/b.py b/b.py\n--- a/b.py\n+++ b/b.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    gitlink = (
        "diff --git a/sub b/sub\nnew file mode 160000\nindex 0000000..abc\n--- /dev/null\n"
        "+++ b/sub\n@@ -0,0 +1 @@\n+Subproject commit abc\n"
    )
    messages = [
        Message(role="user", content="fix"),
        _call("Edit", file_path="/repo/a.py", old_string="x", new_string="y"),
        _result("Edit", "ok"),
        _call("Bash", command="git -C /repo diff --cached"),
        _result("Bash", patch + gitlink),
        _call("Bash", command="git diff --stat"),
        _result("Bash", " b.py | 2 +-"),
    ]
    card = build_experience(messages).card
    assert card.edited_files == ["b.py"]
    assert "Subproject" not in card.final_diff


def test_last_test_run_decides_tests_passed() -> None:
    def run(command: str, output: str) -> list[Message]:
        return [_call("Bash", command=command), _result("Bash", output)]

    fail = "F\n=========================== 1 failed, 2 passed in 0.1s ==========================="
    django_ok = "Ran 12 tests in 0.3s\n\nOK"
    messages = [Message(role="user", content="fix"), *run("python -m pytest t.py", fail)]
    assert build_experience(messages).card.tests_passed is False
    messages += run("python tests/runtests.py queries", django_ok)
    card = build_experience(messages).card
    assert card.tests_passed is True and "ran 12 tests" in card.outcome
    messages += run(
        "bin/test sympy/core",
        "tests finished: 10 passed, 1 failed, in 2.1 seconds\nDO *NOT* COMMIT!",
    )
    assert build_experience(messages).card.tests_passed is False
    assert build_experience(messages[:1]).card.tests_passed is None


def test_errors_are_exception_lines_without_startup_noise() -> None:
    noise = (
        "Error processing line 1 of /x/site-packages/m.pth:\n\n"
        "  Traceback (most recent call last):\n"
        "  AttributeError: 'NoneType' object has no attribute 'loader'\n\n"
        "Remainder of file ignored\n"
    )
    trace = (
        "Traceback (most recent call last):\n"
        '  File "r.py", line 3, in <module>\n    f(None)\nTypeError: bad operand\n'
    )
    messages = [
        Message(role="user", content="fix"),
        _call("Bash", command="python r.py"),
        _result("Bash, error", "Exit code 1\n" + noise + trace),
    ]
    experience = build_experience(messages)
    assert experience.card.errors == ["TypeError: bad operand"]
    assert [s.kind for s in experience.steps] == ["error"]
    assert "typeerror" in experience.terms


def test_card_text_is_bounded_and_task_first() -> None:
    messages = [
        Message(role="user", content="word " * 5000),
        *load_claude_code_jsonl(SESSION).messages[1:],
    ]
    for limit in (600, 1500, 4000):
        card = build_experience(messages, max_chars=limit).card
        assert len(card.text) <= limit
        assert card.text.startswith("## Task\nword word")
    assert len(build_experience(messages).card.task.split()) <= 301


def test_deterministic() -> None:
    messages = load_claude_code_jsonl(SESSION).messages
    assert build_experience(messages) == build_experience(messages)


@pytest.mark.parametrize(
    ("cleanup", "edited"),
    [
        ("rm -rf /repo/scratchdir", ["pkg/mod.py"]),
        ("rm /repo/scratchdir/check_*.py", ["pkg/mod.py"]),
        ("git checkout -- scratchdir/check_a.py", ["pkg/mod.py"]),
        ("rm -rf /repo", ["scratchdir/check_a.py", "pkg/mod.py"]),  # tidying the checkout
    ],
)
def test_removed_and_reverted_files(cleanup: str, edited: list[str]) -> None:
    messages = [
        Message(role="user", content="fix g"),
        _call("Read", file_path="/repo/pkg/mod.py"),
        _result("Read", "     1→def g():\n     2→    pass"),
        _call("Read", file_path="/repo/scratchdir/check_a.py"),
        _result("Read", "     1→A = 1"),
        _call(
            "Edit", file_path="/repo/scratchdir/check_a.py", old_string="A = 1", new_string="A = 2"
        ),
        _result("Edit", "ok"),
        _call(
            "Edit", file_path="/repo/pkg/mod.py", old_string="    pass", new_string="    return 0"
        ),
        _result("Edit", "ok"),
        _call("Bash", command=cleanup),
        _result("Bash", ""),
    ]
    assert build_experience(messages).card.edited_files == edited


CHAT = [
    Message(role="user", content="Ana: Guess what, we adopted a golden retriever puppy on Saturday!", timestamp=1683553560000),
    Message(role="assistant", content="Ben: No way! What's the little one called?", timestamp=1683553561000),
    Message(role="user", content="Ana: Max. He already chewed one of my running shoes.", timestamp=1683553562000),
]


def test_a_conversation_is_not_forced_into_a_coding_card() -> None:
    experience = build_experience(CHAT)
    text = experience.card.text
    assert text.startswith("## Conversation\n3 messages, 2023-05-08 13:46 UTC")
    assert "## Opening\nAna: Guess what, we adopted a golden retriever puppy" in text
    for coding in ("## Task", "## Outcome", "## Tests", "No file edits", "no test outcome"):
        assert coding not in text
    # Every word its turns said (its card holds only the opening): the relevance model's time
    # features compare sessions by them (`ranking/time_features.py`).
    assert set(experience.metadata) == {"conversation", "said"} and experience.metadata["conversation"] is True
    assert {"adopted", "puppy", "max", "chewed", "shoes"} <= set(experience.metadata["said"])
    assert experience.steps == []
    assert experience.card.task == CHAT[0].text and not experience.card.edited_files
    long = build_experience([Message(role="user", content="Ana: " + "la " * 3000)], max_chars=600).card.text
    assert len(long) <= 600 and long.startswith("## Conversation\n1 message\n\n## Opening\nAna: la la")


def test_a_note_that_names_code_or_a_session_that_runs_it_stays_a_coding_card() -> None:
    note = [Message(role="user", content="Fixed the crash in parsers/diff.py when a hunk header has no context")]
    ran = [*CHAT, _call("Bash", command="python -m pytest -q"), _result("Bash", "1 passed in 0.01s")]
    for messages in (note, ran):
        experience = build_experience(messages)
        assert experience.card.text.startswith("## Task\n") and "## Outcome" in experience.card.text
        assert "conversation" not in experience.metadata
