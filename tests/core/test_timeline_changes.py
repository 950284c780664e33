"""A change of choice read from a sentence's structure (`codemem/timeline/changes.py`), and
a statement superseded because a later session's change names what it stated, whatever
words the statement itself was said in."""

from __future__ import annotations

from codemem.contract.types import SearchRequest
from codemem.memory import Memory
from codemem.timeline.changes import Change, change
from codemem.timeline.facts import Fact, facts
from codemem.timeline.index import DialogueIndex
from tests.chat import add_chat, fact_card, ms


def test_a_change_is_read_from_its_marker_and_the_names_around_it() -> None:
    assert facts("Rolled the linter off Flake8 and onto Ruff last week.") == [Fact("linter", "ruff", "flake8")]
    assert facts("Kim: the event bus sits on Kafka now, not RabbitMQ.") == [Fact("event bus", "kafka", "rabbitmq")]
    assert facts("We dropped Sentry; GlitchTip reports our errors from now on.") == [Fact("", "glitchtip", "sentry")]
    assert facts("Base image bumped from python:3.11 to python:3.12 for the workers.") == [
        Fact("worker", "python:3.12", "python:3.11")]
    assert facts("Page size: 50 rows -> 200 rows.") == [Fact("", "200 rows", "50 rows")]
    assert change("Nightly builds moved away from Jenkins in favour of Buildkite.") == Change("Buildkite", "Jenkins")


def test_no_change_without_a_name_on_either_side() -> None:
    assert change("Ben went from the morning shift to the night shift.") is None
    assert change("Heard from the design team that the mockups are late.") is None
    assert change("I am not sure about it, not yet.") is None
    assert change("Rolled back the deploy after lunch.") is None
    assert change("Anna copied the numbers from Grafana to the doc.") is None  # "from X to Y" needs two names
    assert change("It was Tuesday, not Monday.") is None  # days are dates, not choices
    assert change("Dropped Sam a note; Priya will review it.") is None  # what is dropped ends its clause
    assert facts("Did we move off Flake8 and onto Ruff?") == []




CHAT = [
    ("kickoff", "2025-01-06", ["Nightly builds happen on Jenkins, Priya set the box up last year.",
                               "Retro is on Thursday, bring one thing that went well.",
                               "Ravi set up the staging box for the demo."]),
    ("week2", "2025-01-13", ["The onboarding doc needs screenshots before Friday.",
                             "Ravi is out on Friday, the demo moves to Monday."]),
    ("week3", "2025-01-20", ["Rolled nightly builds off Jenkins and onto Buildkite yesterday.",
                             "Lunch order for the offsite goes out tomorrow."]),
]


def test_a_statement_is_superseded_by_a_later_change_that_names_its_value(memory: Memory) -> None:
    add_chat(memory, "chat", CHAT)
    hits = memory.search(SearchRequest(user_id="chat", query="Are we still on Jenkins for nightly builds?", top_k=10))
    assert hits[0].session_id == "week3" and "Buildkite" in str(hits[0].content)
    old = next(h for h in hits if "happen on Jenkins" in str(h.content))
    assert old.metadata["superseded_by"] == {"session_id": "week3", "date": "2025-01-20", "value": "buildkite"}
    assert hits.index(old) > 0


def test_a_name_said_again_without_a_new_value_supersedes_nothing(memory: Memory) -> None:
    add_chat(memory, "chat", CHAT)
    hits = memory.search(SearchRequest(user_id="chat", query="Who set up the staging box for the demo?", top_k=10))
    staging = next(h for h in hits if "staging box" in str(h.content))
    assert "superseded_by" not in staging.metadata



def test_the_index_finds_a_named_value_replaced_and_the_chain_that_follows() -> None:
    index = DialogueIndex()
    index.put([fact_card("a", "2025-02-03", ["Tickets live in Trac, it is old but fine."]),
               fact_card("b", "2025-02-10", ["Tickets moved off Trac and onto Redmine over the weekend."]),
               fact_card("c", "2025-02-17", ["Redmine was slow, so the tickets went from Redmine to YouTrack."]),
               fact_card("d", "2025-02-24", ["Mira is out on Friday; Trac screenshots are in the wiki."])])
    found = index.replaced_named("Tickets live in Trac, it is old but fine.", ms("2025-02-03"), "a")
    assert found is not None
    first, latest = found
    assert (first.session_id, first.fact.value) == ("b", "redmine")
    assert (latest.session_id, latest.fact.value) == ("c", "youtrack")
    # Said after the change, or in the session that made it: not replaced by it.
    assert index.replaced_named("Trac screenshots are in the wiki.", ms("2025-02-24"), "d") is None
    assert index.replaced_named("Tickets moved off Trac and onto Redmine.", ms("2025-02-10"), "b") is not None  # by c
    assert index.replaced_named("Nothing about tickets here: Tracy joined.", ms("2025-02-03"), "a") is None
    assert [s.fact.value for s in index.current_of_named("Are we still on Trac?")] == ["youtrack"]
    assert index.current_of_named("Are we still on Jira?") == []
