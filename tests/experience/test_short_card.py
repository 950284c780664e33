"""A card's short form (what a quiet answer shows of each experience after the first): the
task's headline and how it ended, not the harness's preamble or a clipped card head."""

from __future__ import annotations

from codemem.experience.building.render import card_sections, headline, render_card, short_card
from codemem.experience.types import ExperienceCard

HARNESS_TASK = """Fix this bug to solve the issue based on manual.yaml:
  instance_id: django__django-16910
  repo: django/django
  base_commit: 4142739af1cda53581af4169dbe16d6cd5e26948
  problem_statement: QuerySet.only() doesn't work with select_related() on a reverse OneToOneField relation.
Description
On Django 4.2 calling only() with select_related() on a query using the reverse lookup ..."""


def _card(task: str) -> str:
    return render_card(ExperienceCard(task=task, outcome="Edited django/db/models/sql/query.py; final test run passed",
                                      edited_files=["django/db/models/sql/query.py"], edited_symbols=["Query"],
                                      final_diff="--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"))


def test_the_headline_skips_a_harness_preamble_and_its_metadata() -> None:
    assert headline(HARNESS_TASK) == ("QuerySet.only() doesn't work with select_related() on a reverse "
                                      "OneToOneField relation.")
    assert headline("Add a --json flag to `codemem search`\n\nIt would help scripts.") == "Add a --json flag to `codemem search`"
    assert headline("fix:\nlint") == "fix:"  # nothing reads as a headline: the first line


def test_a_short_card_is_the_headline_and_the_outcome() -> None:
    card = _card(HARNESS_TASK)
    assert {title for title, _ in card_sections(card)} >= {"Task", "Outcome", "Edited", "Final diff"}
    short = short_card(card, 300)
    assert short == ("QuerySet.only() doesn't work with select_related() on a reverse OneToOneField relation.\n"
                     "Outcome: Edited django/db/models/sql/query.py; final test run passed")
    assert len(short_card(card, 60)) <= 60


def test_a_text_without_a_task_section_keeps_its_head() -> None:
    conversation = "## Conversation\n12 messages\n\n## Opening\n" + "we talked about the trip " * 40
    assert short_card(conversation, 80) == conversation[:76].rsplit(" ", 1)[0] + " ..."
