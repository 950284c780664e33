"""A subject's value read from a clause that opens with the subject phrase
(`codemem/timeline/subjects.py`), and a statement superseded because a later session gives
the same subject another name, though it never names the value it replaces."""

from __future__ import annotations

from codemem.contract.types import SearchRequest
from codemem.memory import Memory
from codemem.timeline.facts import Fact, facts, same_subject, supersedes
from codemem.timeline.index import DialogueIndex
from codemem.timeline.subjects import subject_values
from tests.chat import add_chat, fact_card, ms


def test_a_subject_phrase_at_the_head_of_a_clause_takes_the_name_linked_to_it() -> None:
    assert subject_values("The heartbeat interval is 20 seconds.") == [("heartbeat interval", "20 seconds")]
    assert subject_values("Nightly exports run through Airflow, Dana wrote the DAGs.") == [("nightly exports", "Airflow")]
    assert subject_values("Sol: for the nightly export, we will schedule Airflow.") == [("nightly export", "Airflow")]
    assert subject_values("Airflow ate the box, so thumbnails go to Cloudflare R2 now.") == [("thumbnails", "Cloudflare R2")]
    assert facts("Airflow ate the box, so thumbnails go to Cloudflare R2 now.") == [Fact("thumbnail", "cloudflare r2")]


def test_no_subject_value_where_the_name_has_another_role() -> None:
    assert subject_values("I paired with Marta on the flaky test.") == []  # a person, no subject phrase
    assert subject_values("The Grafana board is fine.") == []  # the name is in the subject, not its value
    assert subject_values("Standup moved to Wednesday.") == []  # a day is a date, not a name
    assert subject_values("The demo went well and the client liked it.") == []  # no name at all
    assert subject_values("Thumbnails go to S3; thumbnails go to R2 in staging.") == []  # which holds is not said
    assert facts("Is the heartbeat interval 20 seconds?") == []


def test_subjects_are_one_where_the_shorter_ends_the_longer() -> None:
    assert same_subject("flag", "feature flag") and same_subject("mobile app", "mobile app")
    assert not same_subject("mobile app", "web app") and not same_subject("", "app")
    assert supersedes(Fact("feature flag", "flipt"), Fact("flag", "growthbook"))
    assert not supersedes(Fact("web app", "svelte"), Fact("mobile app", "flutter"))




def test_the_index_chains_statements_of_one_subject_across_sessions() -> None:
    index = DialogueIndex()
    index.put([fact_card("a", "2025-03-03", ["The heartbeat interval is 20 seconds, tuned by hand."]),
               fact_card("b", "2025-03-10", ["Pings were too chatty, so the heartbeat interval is 45 seconds from today."]),
               fact_card("c", "2025-03-17", ["The web app is on SvelteKit; it ships next week."]),
               fact_card("d", "2025-03-24", ["Battery drain was bad, so the heartbeat interval is 90 seconds now."])])
    found = index.superseded(Fact("heartbeat interval", "20 seconds"), ms("2025-03-03"), "a")
    assert found is not None
    first, latest = found
    assert (first.session_id, first.fact.value) == ("b", "45 seconds")
    assert (latest.session_id, latest.fact.value) == ("d", "90 seconds")
    assert index.superseded(Fact("web app", "sveltekit"), ms("2025-03-17"), "c") is None



CHAT = [
    ("plan", "2025-03-03", ["Sol: for the nightly export, we will schedule Airflow.",
                            "Dana: The office plants need water on Fridays.",
                            "Sol: I paired with Dana on the login page."]),
    ("mid", "2025-03-12", ["Dana: The quarterly survey is out, please fill it in.",
                           "Sol: The mobile app is Flutter for the first release."]),
    ("late", "2025-03-26", ["Dana: Airflow kept eating memory, so the nightly export runs under Dagster from this sprint.",
                            "Sol: The web app is SvelteKit, no change there."]),
]


def test_a_statement_is_superseded_by_a_later_name_for_its_subject(memory: Memory) -> None:
    add_chat(memory, "chat", CHAT)
    hits = memory.search(SearchRequest(user_id="chat", query="What schedules the nightly export now?", top_k=10))
    assert hits[0].session_id == "late" and "Dagster" in str(hits[0].content)
    old = next(h for h in hits if "schedule Airflow" in str(h.content))
    assert old.metadata["superseded_by"] == {"session_id": "late", "date": "2025-03-26", "value": "dagster"}
    mobile = next(h for h in memory.search(SearchRequest(user_id="chat", query="What is the mobile app built with?",
                                                         top_k=10)) if "Flutter" in str(h.content))
    assert "superseded_by" not in mobile.metadata  # "the web app" is another subject
