"""Writes the timeline fixtures: dated project-chat sessions of invented projects whose
choices change over time, with questions labelled by the sessions that hold each answer.

    python -m eval.quality.timeline_fixtures     # eval/data/timeline/<project>.json

Deterministic (seeded). Each project has subjects (a migration tool, a host, a timeout...)
whose value changes in later sessions, each statement phrased by one of several templates;
beacon and marigold use templates of their own, none shared with the others, so that a pattern
written for the first three projects' phrasings was not scored on them; once supersession was
developed against them too, they joined the dev split. kestrel (`kestrel.json`), written
separately as held-out, joined it after it was scored once and developed against. The held-out
projects, osprey and wren, are not written here either: they were written by someone who had
read neither the code nor the other fixtures, before any scoring on them. Other turns are the talk of a
team (reviews, people, incidents) and share words with the questions. Question kinds:
`update` (the current value: the answer is in the newest session that states one; `related`
lists every session that stated a value), `when` (the date of a change, some said as
"yesterday" or "last week": `date` is the day the change was made), `before` (the value a
change replaced), `multi` (every value over time: all of them), `single` (a subject stated
once) and `absent` (a subject never discussed: no session).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "data" / "timeline"


@dataclass(frozen=True)
class Subject:
    name: str  # as said in a statement ("database migrations")
    asked: str  # as asked about ("migration tool")
    values: tuple[str, ...]  # oldest first


@dataclass(frozen=True)
class Project:
    name: str
    phrasing: str  # the template family its statements use: "dev" or "heldout"
    start: date
    subjects: tuple[Subject, ...]
    absent: tuple[str, ...]  # asked-about subjects never discussed
    people: tuple[str, ...]
    # The evaluation split it is scored in: its phrasing's unless it was developed against
    # after being written as held-out (then "dev").
    split: str = ""

    def split_name(self) -> str:
        return self.split or self.phrasing


FIRST = {
    "dev": ("We use {v} for {s}.", "For {s} we went with {v}.", "We settled on {v} for {s}.",
            "Let's go with {v} for {s}, it is the simplest option.", "We're using {v} for {s} for now."),
    "heldout": ("Decision recorded: {s} will be handled by {v}.", "{v} it is for {s}, everyone agreed.",
                "Going forward {s} is done with {v}.", "The plan: {v} covers {s}."),
}
CHANGE = {
    "dev": ("We switched from {old} to {v} for {s}.", "Heads up: {s} now uses {v} instead of {old}.",
            "We replaced {old} with {v} for {s}.", "We moved {s} from {old} to {v}, it was overdue.",
            "{old} is gone, we're on {v} for {s} now."),
    "heldout": ("After the review, {s} is handled by {v} rather than {old}.", "Decision: {v} replaces {old} for {s}.",
                "We dropped {old}; {v} handles {s} from today.", "Migrated {s} off {old} and onto {v} this sprint.",
                "{s} runs on {v} these days, not {old}."),
}
RELATIVE = (("yesterday", 1), ("two days ago", 2), ("last week", 7), ("on Monday", None))
FILLER = (
    "{p} is out on {day}, so the review moves to the afternoon.",
    "The {s} discussion ran long again, we should timebox it.",
    "{p} asked whether anyone has looked at the flaky signup tests.",
    "Standup notes: nothing blocked, {p} is pairing with {q} on the onboarding flow.",
    "Customer call went fine, they mostly asked about pricing and exports.",
    "Can someone review the docs for the {s} setup? {p} wrote a draft.",
    "The incident from the weekend is written up, root cause was an expired certificate.",
    "{p} will demo the new dashboard on {day}.",
    "We should revisit the roadmap next month, the {s} work took longer than planned.",
    "Reminder that the office is closed on {day}.",
    "I spent the morning on the {s} benchmarks, numbers look similar to before.",
    "{q} is interviewing two candidates for the backend role this week.",
)
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")

PROJECTS = (
    Project("ledgerly", "dev", date(2024, 1, 8), (
        Subject("database migrations", "migration tool", ("Alembic", "Aerich")),
        Subject("authentication", "authentication method", ("session cookies", "JWT", "OAuth with Keycloak")),
        Subject("hosting", "hosting provider", ("Heroku", "Fly", "AWS ECS")),
        Subject("background jobs", "job queue", ("Celery", "Dramatiq")),
        Subject("the API timeout", "API timeout", ("10 seconds", "30 seconds")),
        Subject("error tracking", "error tracker", ("Sentry",)),
        Subject("caching", "cache", ("Redis", "Memcached")),
        Subject("the docs site", "documentation tool", ("Sphinx",)),
    ), ("frontend framework", "feature flag service", "mobile app framework", "load testing tool", "search engine",
        "email provider", "design system", "secrets manager"), ("Dana", "Omar", "Priya")),
    Project("trailhead", "dev", date(2024, 3, 4), (
        Subject("maps", "map provider", ("Google Maps", "Mapbox", "MapLibre")),
        Subject("the mobile app", "mobile framework", ("React Native", "Flutter")),
        Subject("analytics", "analytics tool", ("Mixpanel", "PostHog")),
        Subject("push notifications", "push notification service", ("Firebase", "OneSignal")),
        Subject("the sync interval", "sync interval", ("15 minutes", "5 minutes")),
        Subject("crash reporting", "crash reporter", ("Crashlytics",)),
        Subject("payments", "payment provider", ("Stripe", "Paddle")),
        Subject("continuous integration", "CI service", ("CircleCI", "GitHub Actions")),
    ), ("search engine", "database migration tool", "email provider", "video hosting", "job queue", "log aggregator",
        "API gateway", "translation service"), ("Lena", "Marco", "Yuki")),
    Project("quarry", "dev", date(2024, 5, 6), (
        Subject("orchestration", "orchestrator", ("Airflow", "Dagster", "Prefect")),
        Subject("the warehouse", "data warehouse", ("Redshift", "Snowflake")),
        Subject("transformations", "transformation tool", ("plain SQL scripts", "dbt")),
        Subject("data quality checks", "data quality tool", ("Great Expectations", "Soda")),
        Subject("the retention period", "retention period", ("90 days", "180 days", "1 year")),
        Subject("dashboards", "BI tool", ("Metabase",)),
        Subject("ingestion", "ingestion tool", ("Fivetran", "Airbyte")),
        Subject("file storage", "object store", ("S3",)),
    ), ("frontend framework", "authentication method", "mobile framework", "payment provider", "error tracker",
        "push notification service", "CI service", "cache"), ("Ines", "Tom", "Ravi")),
    Project("beacon", "heldout", date(2024, 2, 5), (
        Subject("device firmware updates", "firmware update system", ("Mender", "SWUpdate")),
        Subject("the message broker", "message broker", ("Mosquitto", "EMQX")),
        Subject("time series storage", "time series database", ("InfluxDB", "TimescaleDB")),
        Subject("the heartbeat interval", "heartbeat interval", ("60 seconds", "20 seconds")),
        Subject("alerting", "alerting tool", ("PagerDuty", "Opsgenie")),
        Subject("the admin console", "admin console framework", ("Django admin",)),
    ), ("payment provider", "search engine", "analytics tool"), ("Sven", "Aiko", "Noor"), split="dev"),
    Project("marigold", "heldout", date(2024, 4, 1), (
        Subject("search", "search engine", ("Elasticsearch", "Meilisearch", "Typesense")),
        Subject("the storefront", "storefront framework", ("Shopify Liquid", "Remix")),
        Subject("email", "email provider", ("Mailgun", "Postmark")),
        Subject("the image CDN", "image CDN", ("Cloudinary", "imgix")),
        Subject("checkout sessions", "checkout session lifetime", ("30 minutes", "2 hours")),
        Subject("translations", "translation service", ("Crowdin",)),
    ), ("orchestrator", "firmware update system", "mobile framework"), ("Ada", "Felix", "June"), split="dev"),
)


def build(p: Project, rng: random.Random) -> dict[str, object]:
    """The project's sessions (each subject's values spread over them in order) and questions."""
    # Each statement (subject, value index) gets a session; a subject's values go in order.
    n_sessions = 12
    statements: list[tuple[int, Subject, int]] = []
    for s in p.subjects:
        slots = sorted(rng.sample(range(n_sessions), len(s.values)))
        statements += [(slot, s, i) for i, slot in enumerate(slots)]
    sessions = []
    when_of: dict[tuple[str, int], tuple[int, date]] = {}  # (subject, value index) -> (session, day made)
    day = p.start
    for n in range(n_sessions):
        day += timedelta(days=rng.choice((5, 6, 7, 8, 9, 12)))
        stamp = datetime(day.year, day.month, day.day, 10, 0, tzinfo=UTC)
        turns: list[str] = []
        for slot, s, i in statements:
            if slot != n:
                continue
            if i == 0:
                text = rng.choice(FIRST[p.phrasing]).format(v=s.values[0], s=s.name)
                made = day
            else:
                text = rng.choice(CHANGE[p.phrasing]).format(v=s.values[i], old=s.values[i - 1], s=s.name)
                made = day
                if rng.random() < 0.4:
                    phrase, back = rng.choice(RELATIVE)
                    if back is None:  # "on Monday": the Monday of the session's week, or the previous one
                        back = day.weekday() or 7
                        phrase = "on Monday" if back < 7 else "last Monday"
                    made = day - timedelta(days=back)
                    text = f"{phrase[0].upper()}{phrase[1:]} {text[0].lower()}{text[1:]}" if phrase != "last week" else f"{text[:-1]} last week."
                    if phrase == "last week":
                        made = day - timedelta(days=7)
            when_of[(s.name, i)] = (n, made)
            turns.append(text)
        fillers = rng.sample(FILLER, rng.choice((3, 4, 5)))
        for f in fillers:
            turns.insert(rng.randrange(len(turns) + 1), f.format(p=rng.choice(p.people), q=rng.choice(p.people),
                                                                  day=rng.choice(DAYS), s=rng.choice(p.subjects).name.removeprefix("the ")))
        messages = []
        for j, text in enumerate(turns):
            speaker = p.people[j % len(p.people)]
            messages.append({"role": "user" if j % 2 == 0 else "assistant", "content": f"{speaker}: {text}",
                             "timestamp": int(stamp.timestamp() * 1000) + j * 60_000})
        sessions.append({"id": f"s{n + 1:02d}", "date": stamp.isoformat().replace("+00:00", "Z"), "messages": messages})
    return {"project": p.name, "split": p.split_name(), "sessions": sessions, "questions": _questions(p, when_of, rng)}


def _questions(p: Project, when_of: dict[tuple[str, int], tuple[int, date]], rng: random.Random) -> list[dict[str, object]]:
    def sid(n: int) -> str:
        return f"s{n + 1:02d}"

    qs: list[dict[str, object]] = []
    for s in p.subjects:
        held = [when_of[(s.name, i)][0] for i in range(len(s.values))]
        if len(s.values) == 1:
            qs.append({"question": f"Which {s.asked} do we use?", "kind": "single", "sessions": [sid(held[0])]})
            qs.append({"question": f"What did we pick as the {s.asked}?", "kind": "single", "sessions": [sid(held[0])]})
            continue
        related = [sid(n) for n in held]
        for template in ("Which {a} do we use now?", "What is our current {a}?", "Are we still on {old}?"):
            qs.append({"question": template.format(a=s.asked, old=s.values[0]), "kind": "update",
                       "sessions": [sid(held[-1])], "related": related, "values": list(s.values)})
        for i in range(1, len(s.values)):
            n, made = when_of[(s.name, i)]
            qs.append({"question": f"When did we switch {s.name} to {s.values[i]}?", "kind": "when",
                       "sessions": [sid(n)], "date": made.isoformat()})
            qs.append({"question": f"What did we use for {s.name} before {s.values[i]}?", "kind": "before",
                       "sessions": [sid(held[i - 1]), sid(n)]})
        qs.append({"question": f"Which {s.asked} options have we used over time?", "kind": "multi", "sessions": related})
    for i, a in enumerate(p.absent):
        qs.append({"question": f"Which {a} do we use?", "kind": "absent", "sessions": []})
        asked = ("What did we decide about the {a}?", "Did we ever change the {a}?", "Who set up the {a}?")[i % 3]
        qs.append({"question": asked.format(a=a), "kind": "absent", "sessions": []})
    return qs


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    for i, p in enumerate(PROJECTS):
        data = build(p, random.Random(1000 + i))
        (OUT / f"{p.name}.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        print(f"{p.name} ({p.split_name()}): {len(data['sessions'])} sessions, {len(data['questions'])} questions")  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
