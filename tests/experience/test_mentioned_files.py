"""A file a session names without a recorded edit ("Fixed in django/db/models/query.py") is a
mentioned file: the card lists it (## Mentioned) and its outcome names it, where it said only
"No file edits kept" (the README's Add example). A session with edits is as before."""

from __future__ import annotations

import json

from cli.results import format_hit
from codemem.contract.types import AddRequest, Message, SearchRequest
from codemem.experience import build_experience
from codemem.experience.types import ExperienceCard
from codemem.memory import Memory
from tests.experience.helpers import FAMILIES, load_family

README_ADD = [
    Message(role="user", content="QuerySet.filter(None) raises TypeError", timestamp=1704067200000),
    Message(role="assistant", content="Fixed in django/db/models/query.py: guard None before the lookup."),
]


def _card(messages: list[Message]) -> ExperienceCard:
    return build_experience(messages).card


def test_the_readme_example_lists_the_file_its_fix_message_names() -> None:
    card = _card(README_ADD)
    assert card.edited_files == [] and card.mentioned_files == ["django/db/models/query.py"]
    assert card.outcome.startswith("No file edits kept; names django/db/models/query.py")
    assert "## Mentioned\nfiles: django/db/models/query.py" in card.text


def test_a_task_naming_a_file_and_a_bare_name_of_a_read_file() -> None:
    read = json.dumps({"file_path": "/repo/pkg/parsers/diff.py"})
    card = _card([
        Message(role="user", content="Fix the crash in parsers/diff.py on empty hunks"),
        Message(role="assistant", content=f"Tool call Read {read}"),
        Message(role="user", content="Tool result (Read):\n1\tdef parse(text):\n2\t    return text.split()"),
        Message(role="assistant", content="diff.py splits on nothing; the fix also belongs in pkg/parsers/hunks.py "
                                          "and README.md."),
    ])
    # The read file is not mentioned again, by the task's path or by its bare name.
    assert card.read_files == ["pkg/parsers/diff.py"]
    assert card.mentioned_files == ["pkg/parsers/hunks.py", "README.md"]


def test_sessions_with_edits_keep_their_cards() -> None:
    for family in FAMILIES:
        messages, _ = load_family(family)
        card = _card(messages)
        if card.edited_files:
            assert card.mentioned_files == [] and "## Mentioned" not in card.text, family


def test_the_stored_card_and_the_cli_say_it(memory: Memory) -> None:
    memory.add(AddRequest(request_id="run1:task7:chunk0", user_id="my-repo", session_id="session-42",
                          messages=README_ADD))
    hits = memory.search(SearchRequest(user_id="my-repo", query="TypeError when filtering with None", top_k=5))
    card = next(h for h in hits if h.metadata["kind"] == "card")
    assert card.metadata["mentioned_files"] == ["django/db/models/query.py"]
    assert "    mentioned: django/db/models/query.py\n" in format_hit(1, card)
