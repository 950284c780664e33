"""The ids people are shown are the ids the core takes back: a unique prefix of 7 or more
characters of a session id, of a commit's SHA or of an item id names its experience
(codemem/store/short_ids.py), in `Memory.experience` (MCP's get_experience) and `experience_record`
(the /ui experience page)."""

from __future__ import annotations

import pytest

from codemem.contract.types import AddRequest, Message
from codemem.errors import InvalidInput, NotFound
from codemem.memory import Memory

USER = "repo:github.com/acme/calc"
FIX = "d49cfb35d4bb7a1e0c2f9e8d7c6b5a4f3e2d1c0b"  # two SHAs sharing their first 7 characters
TWIN = "d49cfb3aa0000000000000000000000000000000"


def _add(memory: Memory, session_id: str, task: str, user: str = USER) -> None:
    memory.add(AddRequest(f"{session_id}-r", user, session_id, [
        Message("user", task, timestamp=1_704_067_200_000),
        Message("assistant", f"Done: {task.lower()}", timestamp=1_704_067_201_000),
    ]))


@pytest.fixture
def filled(memory: Memory) -> Memory:
    _add(memory, f"git:{FIX}", "Fix ZeroDivisionError in divide when b is 0")
    _add(memory, f"git:{TWIN}", "Add a modulo operation")
    _add(memory, "run_1234567-a", "Speed up the csv export")
    _add(memory, "runX1234567-b", "Bump the docs theme")  # `_` must not match the X: LIKE's wildcard
    _add(memory, "9b2e4f61-0c1d-4e5f-8a9b-0c1d2e3f4a5b", "Rename the settings module")
    _add(memory, "9b2e4f61-ffff-4e5f-8a9b-0c1d2e3f4a5b", "Stranger's session", user="someone-else")
    return memory


def _opened(memory: Memory, ref: str) -> str:
    hits = memory.experience(USER, ref)
    assert hits[0].metadata["kind"] == "card"
    return hits[0].session_id


@pytest.mark.parametrize("ref", [
    f"git:{FIX[:12]}",  # the CLI's `commit d49cfb35d4bb`, with the session id's scheme
    FIX[:12],  # ... or as `git show` takes it
    FIX[:8],
    f"git:{FIX}",  # whole, as before
])
def test_a_commit_opens_by_its_shortened_sha(filled: Memory, ref: str) -> None:
    assert _opened(filled, ref) == f"git:{FIX}"


def test_a_session_and_an_item_open_by_a_unique_prefix(filled: Memory) -> None:
    assert _opened(filled, "9b2e4f61-0c1") == "9b2e4f61-0c1d-4e5f-8a9b-0c1d2e3f4a5b"
    assert _opened(filled, "run_1234") == "run_1234567-a"  # not runX1234567-b
    card = filled.experience(USER, "run_1234567-a")[0].id
    assert _opened(filled, card[:9]) == "run_1234567-a"  # c_ and 7 characters of the card id


def test_an_ambiguous_prefix_is_refused_naming_the_candidates(filled: Memory) -> None:
    with pytest.raises(InvalidInput) as refused:
        filled.experience(USER, FIX[:7])
    assert "ambiguous" in refused.value.reason
    assert f"git:{FIX}" in refused.value.reason and f"git:{TWIN}" in refused.value.reason


def test_too_short_or_unknown_or_another_users_prefix_names_nothing(filled: Memory) -> None:
    with pytest.raises(NotFound, match="at least 7 characters"):
        filled.experience(USER, "git:d49c")
    with pytest.raises(NotFound, match="no experience 'git:0000000'"):
        filled.experience(USER, "git:0000000")
    with pytest.raises(NotFound):  # only someone-else's session starts so
        filled.experience(USER, "9b2e4f61-fff")
    with pytest.raises(NotFound):  # quotes never reach the store's expression
        filled.experience(USER, "git:d49cfb3' OR '1'='1")


def test_the_experience_page_takes_a_prefix_and_names_the_whole_id(filled: Memory) -> None:
    record = filled.experience_record(USER, FIX[:12])
    assert record.session_id == f"git:{FIX}" and "ZeroDivisionError" in record.card.text
    with pytest.raises(InvalidInput, match="ambiguous"):
        filled.experience_record(USER, FIX[:7])


def test_a_deletion_takes_the_whole_id_only(filled: Memory) -> None:
    # A retried delete of "run_1234567" must not remove another session whose id begins so.
    assert filled.delete_experience(USER, "run_1234567") == 0
    assert _opened(filled, "run_1234567-a") == "run_1234567-a"
    assert filled.delete_experience(USER, "run_1234567-a") == 3  # 2 messages and the card
