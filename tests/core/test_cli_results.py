"""Search results as a person reads them (cli/results.py) and as a model reads them
(integrations/mcp_text.py): what to act on first, dated at the experience's own time."""

from __future__ import annotations

from cli.results import format_hit
from codemem import compact
from codemem.contract.types import Hit
from integrations import mcp_text

SHA = "0123456789abcdef0123456789abcdef01234567"
COMMIT_CARD = (
    "Fix ZeroDivisionError in divide (#42)\n"
    "Commit 0123456 by Dev on 2024-01-01: 1 file, +2 -0\n"
    "Files: calc.py\nSymbols: divide\n\nFixes #41\n\nDiff:\n@@ -1 +1 @@ #include <x>\n"
)
SESSION_CARD = (
    "## Task\nSquare.area returns twice the side\n\n## Outcome\nfixed; tests pass\n\n"
    "## Root cause\n- area multiplied by 2 instead of squaring\n\n## Edited\nfiles: pkg/shapes.py\n\n"
    "## Tests\npassed: tests/test_shapes.py\n\nEvidence from this session:\n\n[message, user, position 0]\nhello"
)


def _hit(session_id: str, content: str, **meta: object) -> Hit:
    return Hit(id="c_1", content=content, score=0.5, created_at="2026-11-30T18:00:00.000Z",
               session_id=session_id, metadata={"kind": "card", **meta})


def test_a_commit_leads_with_subject_sha_date_author_files_refs_and_how_to_open_it() -> None:
    text = format_hit(1, _hit(f"git:{SHA}", COMMIT_CARD, edited_files=["calc.py"], timestamp=1704067200000))
    lines = text.splitlines()
    assert lines[0] == "#1  Fix ZeroDivisionError in divide (#42)"
    assert lines[1].split()[:6] == ["commit", SHA[:12], "2024-01-01", "00:00", "UTC", "by"]
    assert "files: calc.py" in text and "refs: #42, #41" in text  # not the diff's "#include"
    assert f"open: git show {SHA[:12]}" in text
    assert "release" not in text  # a change before the project's first release
    released = format_hit(1, _hit(f"git:{SHA}", COMMIT_CARD, after_release="1.18.22", timestamp=1704067200000))
    assert "    landed after release 1.18.22" in released.splitlines()


def test_a_session_leads_with_outcome_root_cause_edits_and_tests() -> None:
    text = format_hit(2, _hit("sess-1", SESSION_CARD, outcome="fixed; tests pass", edited_files=["pkg/shapes.py"],
                              edited_symbols=["Square.area"], timestamp=1735787040000))
    assert text.startswith("#2  Square.area returns twice the side\n    session sess-1  2025-01-02 03:04 UTC")
    for line in ("outcome: fixed; tests pass", "root cause: area multiplied by 2 instead of squaring",
                 "edited: pkg/shapes.py", "symbols: Square.area", "tests: passed: tests/test_shapes.py"):
        assert f"    {line}\n" in text
    assert "    matched (message, user, position 0):\n      hello" in text


def test_a_conversation_leads_with_its_opening_and_no_coding_lines() -> None:
    card = ("## Conversation\n3 messages, 2023-05-08 13:46 UTC\n\n## Opening\nAna: we adopted a puppy!\n\n"
            "Evidence from this session:\n\n[message, user, position 2]\nAna: Max chewed my shoe.")
    text = format_hit(1, _hit("chat-1", card, outcome="a conversation: no code read, edited or run",
                              conversation=True, timestamp=1683553560000))
    assert text.startswith("#1  Ana: we adopted a puppy!\n    session chat-1  2023-05-08 13:46 UTC")
    assert "edited:" not in text and "tests:" not in text and "Max chewed my shoe." in text


def test_without_its_own_time_a_result_says_when_it_was_stored() -> None:
    assert "stored 2026-11-30 18:00 UTC" in format_hit(1, _hit("sess-2", "## Task\nx"))


def test_mcp_blocks_carry_the_experiences_own_time() -> None:
    answer = compact.compact([_hit("s", "x", timestamp=1704067200000)], 5, 1500, lambda _: "")
    text = mcp_text.search_answer(answer, "u", 1500)
    assert 'at="2024-01-01T00:00:00Z" stored="2026-11-30T18:00:00.000Z"' in text
