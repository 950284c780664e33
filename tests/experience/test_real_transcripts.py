"""Real Claude Code sessions from SWE-ContextBench Lite, read straight from the tar."""

from __future__ import annotations

import re
from itertools import islice, pairwise

import pytest

from codemem.experience import build_experience
from codemem.importers.claude_code import iter_transcripts_from_tar
from tests.shared_data import SWE_LITE_TAR, require

_GIT_DIFF_CALL = re.compile(r'^Tool call Bash \{"command":"[^"]*\bgit\b[^"]*\bdiff\b')
_DIFF_FILE = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.M)
_SECTION = re.compile(r"^diff --git ", re.M)


def _last_git_diff_files(messages: list) -> list[str] | None:
    """Files of the last ``git diff`` output, gitlink (Subproject) sections left out."""
    last = None
    for call, result in pairwise(messages):
        if (
            _GIT_DIFF_CALL.match(call.text)
            and result.text.startswith("Tool result (Bash")
            and "diff --git" in result.text
        ):
            last = result.text
    if last is None:
        return None
    starts = [m.start() for m in _SECTION.finditer(last)] + [len(last)]
    sections = [last[a:b] for a, b in pairwise(starts)]
    return [
        m.group(2)
        for s in sections
        if "Subproject commit" not in s
        for m in [_DIFF_FILE.search(s)]
        if m
    ]


@pytest.fixture(scope="module")
def sessions() -> list:
    return list(islice(iter_transcripts_from_tar(require(SWE_LITE_TAR)), 6))


def test_edited_files_equal_the_final_git_diff(sessions: list) -> None:
    compared = 0
    for name, transcript in sessions:
        expected = _last_git_diff_files(transcript.messages)
        if expected is None:
            continue
        compared += 1
        card = build_experience(transcript.messages).card
        assert sorted(card.edited_files) == sorted(expected), name
    assert compared >= 3


def test_real_cards_are_bounded_and_complete(sessions: list) -> None:
    for name, transcript in sessions:
        experience = build_experience(transcript.messages)
        card = experience.card
        assert 0 < len(card.text) <= 4000, name
        assert card.text.startswith("## Task\n")
        assert card.task and card.outcome and card.final_diff, name
        assert card.edited_symbols, name
        assert experience.steps and all(len(s.text) <= 1600 for s in experience.steps), name
        assert all(0 <= s.position < len(transcript.messages) for s in experience.steps)
        assert experience.terms, name
