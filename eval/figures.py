"""The figures the documentation quotes, as data: for each, the result file it is read from,
how it is read, and what kind of figure it is (in-sample, validation, held-out, training or a
plain measurement). `eval.render` turns them into docs/results.md.

A figure is only ever read from its file, so re-running a benchmark and re-rendering is the
whole of updating the documentation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Result = dict[str, Any]

# What a label means; every result file and every figure carries one of these.
LABELS: dict[str, str] = {
    "in-sample": "scored on the tasks the shipped numbers were fitted or chosen on: optimistic",
    "validation": "scored once on dev data nothing was fitted on (or after the rule was fixed)",
    "held-out": "cross-validated: the numbers fitted on some repositories, scored on the others",
    "training": "scored on the training data of a learned model (out-of-fold where said)",
    "measurement": "speed, size or robustness of the service; nothing fitted on it",
    "synthetic": "a hand-written sample that checks the plumbing, not the method",
}

# The label of every result file at the top of eval/results/ (a file may hold figures of
# several kinds: the figures then say which is which).
FILE_LABELS: dict[str, str] = {
    "replay.json": "in-sample",
    "replay-ingest.json": "in-sample",
    "relevance_cv.json": "held-out",
    "relevance_cv-1eb4f70.json": "held-out",
    "ceiling.json": "held-out",
    # The commit-only knobs were chosen on training tasks (train/past_fixes), these 21 validate.
    "past_fixes.json": "validation",
    # Each gate's cost and saving on the dev sets; the thresholds were chosen on training folds.
    "gates.json": "validation",
    "gates-before.json": "validation",
    "past_fixes_cv.json": "held-out",
    "past_fixes_train_cv.json": "training",
    "fusion_train_cv.json": "training",
    "past_fixes-import-ripgrep.json": "measurement",
    "past_fixes-reimport-ripgrep.json": "measurement",
    # The turn answers' weights were chosen on these 383 questions.
    "locomo.json": "in-sample",
    "timeline.json": "in-sample",
    "timeline-quiet.json": "held-out",
    # osprey and wren, held out until issue 41 chose the supersession cosine on them.
    "timeline-heldout.json": "in-sample",
    "timeline-supersession.json": "training",
    "timeline-fresh.json": "validation",
    "timeline-fresh2.json": "validation",
    "timeline-fresh3.json": "validation",
    "timeline-newest-first.json": "training",
    "time-features-trial.json": "training",
    "ranker-without-projects.json": "training",
    "windows-trial.json": "training",
    "adapter-trial.json": "training",
    "finetune-trial.json": "training",
    "finetune-trial-1616.json": "training",
    "encoder-ship.json": "training",
    "encoder-ship-ce93983.json": "training",
    "second-encoder-trial.json": "training",
    "encoder-dev-guard.json": "validation",
    "versus-97be416.json": "measurement",
    "decisions.json": "validation",
    "decisions-suite2.json": "validation",
    "decisions-suite3.json": "validation",
    "decisions-suite4.json": "validation",
    "decisions-suite4-three-files.json": "validation",
    "decisions-suite5.json": "validation",
    "decisions-suite5-four-files.json": "validation",
    "decisions-phrases.json": "validation",
    "staleness-ripgrep.json": "validation",
    "staleness-caddy.json": "validation",
    "experience_stats.json": "measurement",
    "memoryarena.json": "synthetic",
    "memoryarena-budget100.json": "synthetic",
    "latency.json": "measurement",
    "restart.json": "measurement",
    "fragments.json": "measurement",
    "ingest.json": "measurement",
    "git_ingest.json": "measurement",
    "cli_latency.json": "measurement",
    "ui_latency.json": "measurement",
    "load-32x64.json": "in-sample",
    "load-32x64-workers2.json": "measurement",
    "load-64x256.json": "measurement",
    "load-64x256-shed.json": "measurement",
    "load-cold.json": "measurement",
    "read-check.json": "measurement",
    "scale.json": "measurement",
    "kill.json": "measurement",
    "large_messages.json": "measurement",
    "large_messages-main.json": "measurement",
    "proxy_load.json": "measurement",
    "proxy_load-unbounded.json": "measurement",
    "proxy_load-192mib.json": "measurement",
    "proxy_load-b48dc5b.json": "measurement",
    "proxy_load-4mb-messages.json": "measurement",
    "proxy_load-20kb-messages.json": "measurement",
    "install_size.json": "measurement",
}

# Result files whose command is retired (kept in git history), with the script's old path.
RETIRED: dict[str, str] = {"read-check.json": "eval/read_check.py",
                           # The fusion's knob fitting, retired with the fusion (issue 40).
                           "relevance_cv.json": "eval/replay/relevance_cv.py",
                           "relevance_cv-1eb4f70.json": "eval/replay/relevance_cv.py",
                           "fusion_train_cv.json": "train/fusion/fit.py",
                           "past_fixes_cv.json": "eval/quality/past_fixes_cv.py",
                           "past_fixes_train_cv.json": "eval/quality/past_fixes_cv.py"}


@dataclass(frozen=True)
class Figure:
    file: str
    what: str
    read: Callable[[Result], str]
    label: str = ""  # the file's label unless set

    def label_of(self) -> str:
        return self.label or FILE_LABELS[self.file]


def f2(x: float) -> str:
    return f"{x:.2f}"


def f3(x: float) -> str:
    return f"{x:.3f}"


def ms(x: float) -> str:
    return f"{x:,.0f} ms"


def row(r: Result, system: str, condition: str) -> Result:
    """One system's row of a replay summary."""
    return next(s for s in r["summary"] if s["system"] == system and s["condition"] == condition)


def retrieval(system: str, condition: str = "noisy-all") -> Callable[[Result], str]:
    def read(r: Result) -> str:
        s = row(r, system, condition)
        return (f"hit@1 {f2(s['hit1'])}, hit@5 {f2(s['hit5'])}, MRR {f3(s['mrr'])}, "
                f"gold share of 8k {f2(s['gold_share_8k'])}, tokens p50 {s['tokens_total_p50']:,.0f}")
    return read


def absent_tokens(system: str) -> Callable[[Result], str]:
    def read(r: Result) -> str:
        a, n = row(r, system, "absent"), row(r, system, "noisy-all")
        return (f"tokens p50 {a['tokens_total_p50']:,.0f} absent vs {n['tokens_total_p50']:,.0f} noisy-all "
                f"({a['tokens_total_p50'] / n['tokens_total_p50']:.2f}x)")
    return read


def gate_costs(set_name: str) -> Callable[[Result], str]:
    def read(r: Result) -> str:
        s = r["sets"][set_name]
        removed = ", ".join(f"{g} {v['marginal']['golds_removed_from_first_5']}/{s['answerable']}" for g, v in s["gates"].items())
        gated, ungated = s["variants"]["gated"], s["variants"]["ungated"]
        return (f"{removed}; nothing related answered empty {gated['absent_empty']}/{s['nothing_related']}, answerable "
                f"empty {gated['answerable_empty']}; tokens {gated['tokens_answerable_mean']:,.0f} vs {ungated['tokens_answerable_mean']:,.0f} "
                f"answerable, {gated['tokens_absent_mean']:,.0f} vs {ungated['tokens_absent_mean']:,.0f} nothing related; "
                f"golds left out {gated['answerable_gold_left_out']} vs {ungated['answerable_gold_left_out']}")
    return read


# How the past-fix and training files name hit@1, hit@5 and MRR (the replay's say "hit1", "hit5").
AT_KEYS = ("hit@1", "hit@5", "mrr")


def scores(s: Result, keys: tuple[str, str, str] = ("hit1", "hit5", "mrr")) -> str:
    return f"hit@1 {f2(s[keys[0]])}, hit@5 {f2(s[keys[1]])}, MRR {f3(s[keys[2]])}"


def timeline(r: Result) -> str:
    """codemem's and BM25's figures over all of a timeline run's projects."""
    def of(name: str) -> Result:
        return next(s for s in r["summary"] if s["system"] == name and s["scope"] == "all")

    c, b = of("codemem"), of("bm25-sessions")
    return (f"{c['questions']} questions: codemem {f2(c['hit1'])}, {c['newest_first']}, marked {c['older_marked']}; "
            f"BM25 over sessions {f2(b['hit1'])}, {b['newest_first']}, marked {b['older_marked']}")


def load(r: Result) -> str:
    s = r["sustained"]
    add, search = s["add"], s["search"]
    shed = (f"; shed {add['shed']['share']:.0%} of Adds, {search['shed']['share']:.0%} of Searches"
            if add["shed"]["share"] or search["shed"]["share"] else "")
    return (f"{add['throughput_per_s']} Adds/s (p95 {add['latency_ms']['p95'] / 1000:.1f} s), "
            f"{search['throughput_per_s']} Searches/s (p95 {search['latency_ms']['p95'] / 1000:.1f} s), "
            f"{s['server_cpu_ms_per_answer']} ms CPU per answer, {r['lost']} lost{not_shown(r)}{shed}")


def not_shown(r: Result) -> str:
    """Stored Adds whose Search for their mark did not show it (older files counted them as lost)."""
    n = r.get("stored_not_shown")
    return f", {n} stored but not shown by a Search for their mark" if n else ""


def finetune_screen(r: Result) -> str:
    """`train.encoder.finetune_trial`'s MRR before and after, and its rule's verdict."""
    return "{} / {} (packaged) -> {} / {} (fine-tuned); passes its rule: {}".format(
        *(r["results"][v][k]["mrr"] for v in ("packaged", "fine-tuned") for k in ("session", "commit")),
        "yes" if r["passes"] else "no")


def decisions_read(r: Result) -> str:
    """A decision suite's figures: the shares of its decisions and of its other texts read."""
    return "decisions read {:.2f}, non-decisions read {:.2f}".format(r["read"]["decisions_read"], r["read"]["non_decisions_read"])


def latency_at(items: int) -> Callable[[Result], str]:
    def read(r: Result) -> str:
        cp = next(c for c in r["checkpoints"] if c["items"] == items)
        s = cp["search"]["latency_ms"]
        return f"Search p50 {ms(s['p50'])}, p95 {ms(s['p95'])}; query embedding p50 {ms(cp['query_embed_ms']['p50'])}"
    return read


def restart(r: Result) -> str:
    m = r["measured"]
    return (f"compactor off p95 {ms(m['uncompacted']['p95'])}; after restart p95 {ms(m['restart']['after']['p95'])} "
            f"vs compacted store p95 {ms(m['compacted']['p95'])} ({m['after_vs_compacted_p50']}x p50)")


def scale_at(users: int) -> Callable[[Result], str]:
    def read(r: Result) -> str:
        c = next(c for c in r["checkpoints"] if c["users"] == users)
        m, q = c["memory"], c["search"]
        return (f"{c['tokens_total'] / 1e6:.0f}M tokens: RssAnon {m['rss_anon_gb']:.2f} GB after the ingest, "
                f"{m['idle_rss_anon_gb']:.2f} GB after {r['idle_s']:.0f} s idle; disk {c['disk_gb']:.2f} GB; "
                f"user 0's Search p50 {ms(q['p50_ms'])}, p95 {ms(q['p95_ms'])}, hit@1 {q['hit1']:.3f}, "
                f"other users' items {q['foreign_items']}; load {c['loadavg'][0]}")
    return read


def scale_add(r: Result) -> str:
    rows = r["checkpoints"]
    return (f"{r['summary']['add_tokens_per_s_mean'] / 1000:.0f}k tokens/s by the wall clock on the shared machine "
            f"(load {min(c['loadavg'][0] for c in rows)}-{max(c['loadavg'][0] for c in rows)}), "
            f"{r['summary']['add_tokens_per_cpu_s_mean'] / 1000:.0f}k tokens per server CPU-second; "
            f"{r['summary']['add_errors']} errors")


def proxy_load(r: Result) -> str:
    bound = f"{r['add_bytes_bound_mib']:.0f} MiB" if r["add_bytes_bound_mib"] else "none"
    health = r["health_ms"]
    return (f"{r['adds']} x {r['mib_each']} MiB at once ({r.get('messages_each', 160)} messages each), "
            f"byte bound {bound}: Adds {r['add_status']}, "
            f"{r['found_after']}/{r['adds']} found after; /health through Caddy {r['health_status']}, "
            f"p95 {health['p95'] / 1000:.2f} s (straight to codemem {r['health_direct_ms']['p95'] / 1000:.2f} s); "
            f"peak RSS {r['rss_gb']['peak']} GB ({r['rss_gb']['after_30s_idle']} GB 30 s after); "
            f"at most {r['adds_queued_max']:.0f} Adds queued; key in Caddy's logs: {r['key_in_caddy_logs']}")


def experience_files(r: Result) -> str:
    return (f"edited files equal the final `git diff` without reading that diff: "
            f"{r['without_git_diff_equal']}/{r['sessions']} (card size p50 {r['card_chars']['p50']:,} chars)")



def _supersession(r: dict[str, Any]) -> str:
    s = r["supersession"]
    chosen = s["grid"][f"cosine {s['supersede_cosine']}, factor {s['superseded_factor']}, replaced must decide "
                       f"{s['replaced_must_decide']}"]
    return (f"cosine {s['supersede_cosine']}, factor {s['superseded_factor']}, decisions only {s['replaced_must_decide']} "
            f"({chosen['updates']} questions): newest first {chosen['newest_first']}, older values marked "
            f"{chosen['older_marked']}, current values marked {chosen['current_marked']}")

FIGURES: tuple[Figure, ...] = (
    # Retrieval replay: SWE-ContextBench Lite, 62 labelled dev tasks.
    Figure("replay.json", "codemem (the relevance model, the default; scored once), noisy-all", retrieval("codemem"),
           "validation"),
    Figure("replay.json", "the retired hand-set fusion (its session knobs fitted on these 62 tasks), noisy-all",
           retrieval("fused"), "in-sample"),
    Figure("replay.json", "BM25 over whole trajectories, noisy-all", retrieval("bm25-traj"), "validation"),
    Figure("replay.json", "BM25 over messages, noisy-all", retrieval("bm25-msg"), "validation"),
    Figure("replay.json", "codemem, answer size when the gold is absent", absent_tokens("codemem"), "validation"),
    Figure("replay.json", "the retired fusion, answer size when the gold is absent", absent_tokens("fused"), "in-sample"),
    Figure("replay.json", "codemem Search over HTTP during the run, noisy-all",
           lambda r: f"p50 {ms(row(r, 'codemem', 'noisy-all')['latency_p50_ms'])}, "
                     f"p95 {ms(row(r, 'codemem', 'noisy-all')['latency_p95_ms'])}", "measurement"),
    Figure("relevance_cv.json", "the fusion's knobs fitted on one repository, scored on the other",
           lambda r: scores(r["held_out_by_repo"]["noisy-all"])),
    Figure("relevance_cv.json", "the same knobs fitted on all 62 tasks", lambda r: scores(r["in_sample"]["scores"]["noisy-all"]),
           "in-sample"),
    Figure("relevance_cv.json", "what ships (DEFAULT_SEARCH, fitted on all 62 tasks of an earlier ingest)",
           lambda r: scores(r["default_search"]["noisy-all"]), "in-sample"),
    Figure("fusion_train_cv.json", "training: the fusion's knobs fitted on the other repositories' queries (170 with related sessions)",
           lambda r: scores(r["held_out"], AT_KEYS)),
    Figure("fusion_train_cv.json", "training: the same, fitted on all of them",
           lambda r: scores(r["in_sample"], AT_KEYS)),
    Figure("fusion_train_cv.json", "training: the shipped fusion (fitted on the 62 dev tasks) on the same queries",
           lambda r: scores(r["default_search"], AT_KEYS)),
    Figure("ceiling.json", "weighted RRF of every ranking, weights searched on the 62 tasks",
           lambda r: scores(r["fusion_in_sample"]), "in-sample"),
    Figure("ceiling.json", "the same, weights searched on one repository, scored on the other",
           lambda r: scores(r["fusion_held_out_by_repo"])),
    # Past fixes in git histories: 21 bug reports over 5 repositories.
    Figure("past_fixes.json", "codemem (the relevance model, trained on 331 tasks of 17 other histories; scored once)",
           lambda r: scores(r["summary"]["codemem"], AT_KEYS)),
    Figure("past_fixes.json", "the retired hand-set fusion, same run (its commit rankings designed on these 21)",
           lambda r: scores(r["summary"]["fused"], AT_KEYS), "in-sample"),
    Figure("past_fixes.json", "BM25 over message + diff, same run",
           lambda r: scores(r["summary"]["bm25_message_diff"], AT_KEYS), "validation"),
    # Each gate's cost (golds it takes out of the first 5, issue 47 caps it at 1%) and saving.
    *(Figure("gates.json", f"gates on {name}: golds out of the first 5 (floor, quiet, empty; marginal), tokens of the shipped "
             "answer against none", gate_costs(name)) for name in ("swe-contextbench-dev", "past-fixes-dev")),
    Figure("past_fixes_cv.json", "the same procedure on these 21: knobs chosen on the other dev repositories (re-fusion)",
           lambda r: scores(r["held_out"], AT_KEYS)),
    Figure("past_fixes_cv.json", "the same, all four knobs in one grid (re-fusion)",
           lambda r: scores(r["held_out_joint"], AT_KEYS)),
    Figure("past_fixes_cv.json", "the knobs fitted on these 21 (re-fusion)",
           lambda r: scores(r["in_sample"], AT_KEYS), "in-sample"),
    Figure("past_fixes_train_cv.json", "training: 118 past-fix tasks of 6 public repositories, knobs chosen on the other 5 (re-fusion)",
           lambda r: scores(r["held_out"], AT_KEYS)),
    Figure("past_fixes_train_cv.json", "training: the shipped knobs, fitted on all 118 (re-fusion)",
           lambda r: scores(r["shipped"], AT_KEYS)),
    Figure("past_fixes_train_cv.json", "training: without the commit rankings (re-fusion)",
           lambda r: scores(r["without_commit_signals"], AT_KEYS)),
    Figure("past_fixes-import-ripgrep.json", "import of ripgrep's history on a new store",
           lambda r: f"{r['repos']['ripgrep']['added']:,} changes in {r['repos']['ripgrep']['import_s']} s "
                     f"({r['repos']['ripgrep']['added_per_s']} changes/s)"),
    Figure("past_fixes-reimport-ripgrep.json", "re-import of the unchanged history",
           lambda r: f"{r['repos']['ripgrep']['import_s']} s, {r['repos']['ripgrep']['unchanged']:,} unchanged"),
    Figure("staleness-ripgrep.json", "'changed since' flags against `git log -L`, ripgrep",
           lambda r: f"precision {f2(r['summary']['precision'])}, recall {f2(r['summary']['recall'])} "
                     f"({r['summary']['sampled']} sampled changes)"),
    Figure("staleness-caddy.json", "the same, caddy",
           lambda r: f"precision {f2(r['summary']['precision'])}, recall {f2(r['summary']['recall'])} "
                     f"({r['summary']['sampled']} sampled changes)"),
    # Conversations and MemoryArena.
    Figure("locomo.json", "LoCoMo dev: evidence recall within the first 2k tokens (383 questions)",
           lambda r: "codemem {:.2f}, BM25 over turns {:.2f}".format(
               *(next(s for s in r["summary"] if s["system"] == name and s["scope"] == "all")["recall_2k"]
                 for name in ("codemem", "bm25-turns")))),
    Figure("timeline-fresh.json", "Project memory over time, fresh (5 projects: coding-assistant chat, agent sessions, notes, "
           "commits, team chat; written after the design was fixed, scored once): session hit@1; newest first on updates; "
           "older values marked", timeline),
    Figure("timeline.json", "the same, dev (5 projects; training data since issue 41)", timeline),
    Figure("timeline-heldout.json", "the same, osprey and wren (held out until issue 41 chose the supersession cosine on them)",
           timeline),
    Figure("timeline-fresh2.json", "the same, second fresh set (6 projects, two coding chats; written for issue 49 by a helper "
           "who read only the format brief, scored once)", timeline),
    Figure("timeline-fresh3.json", "the same, third fresh set (6 projects of six stacks; written for issue 53 from a brief "
           "alone, checked by content against every training file, scored once; fresh and fresh2 are spent)", timeline),
    Figure("timeline-supersession.json", "the turns' supersession (cosine, discount asked about now, whether only a decision "
           "is replaced), chosen together on the written training projects' update questions", _supersession),
    Figure("timeline-newest-first.json", "asked about now, which experiences come newest first: chosen on the training projects",
           lambda r: "{} (newest first on updates: off {}, related {}, named {})".format(
               r["newest_first"]["newest_first_when_now"], *(r["newest_first"]["figures"][c]["newest_first"]
                                                             for c in ("off", "related", "named")))),
    Figure("time-features-trial.json", "relevance model with / without time features, each project held out: newest first on "
           "694 update questions; contested pairs (not shipped: fails them)",
           lambda r: "{:.3f} / {:.3f}; {:.0f} / {:.0f} of 40".format(
               *(m["project_questions_hit1"]["update"]["learned"] for m in r["models"].values()),
               *(40 * m["contested_pairs"]["ordered_right"] for m in r["models"].values()))),
    Figure("windows-trial.json", "what a card's vector reads, dense signal alone (nothing fitted), training sessions / "
           "reports against commits: MRR of the task alone (today) and of the chosen windows",
           lambda r: "{} / {} (task) -> {} / {} ({})".format(
               *(r["results"]["task (today)"][k]["mrr"] for k in ("session", "commit")),
               *(r["results"][r["chosen"]][k]["mrr"] for k in ("session", "commit")), r["chosen"])),
    Figure("adapter-trial.json", "a query-side adapter trained on public change pairs, dense signal alone, out of fold "
           "(each query's repository held out of its adapter's pairs), training sessions / reports against commits: MRR",
           lambda r: "{} / {} (task+code) -> {} / {} (adapted on code), {} / {} (adapted on both); chosen: {}".format(
               *(r["results"][v][k]["mrr"] for v in ("task+code", "adapted on code", "adapted on both")
                 for k in ("session", "commit")), r["chosen"])),
    Figure("finetune-trial.json", "MiniLM fine-tuned on 816 written reports of public changes (repositories no "
           "screened query comes from), dense signal alone, training sessions / reports against commits: MRR",
           finetune_screen),
    Figure("finetune-trial-1616.json", "the same, fine-tuned on both rounds' 1,616 reports",
           finetune_screen),
    Figure("encoder-ship.json", "the fine-tuned encoder under its ship rule: make train built with it against the same "
           "build with MiniLM, one commit, the relevance model out of fold (2,415 training queries; OpenHands a check)",
           lambda r: "MRR all {:+.3f} (needs >= +0.005), OpenHands check {:+.3f} (needs >= -0.01); dense alone {} -> {}; "
                     "ships: {}".format(r["conditions"]["all queries: MRR at least +0.005"]["difference"],
                                        r["conditions"]["OpenHands check: MRR no more than 0.01 lower"]["difference"],
                                        *(r["single_signals_mrr"][e]["all"]["dense"] for e in ("minilm", "tuned")),
                                        "yes" if r["ships"] else "no")),
    Figure("encoder-ship-ce93983.json", "the same rule read again at ce93983 (both builds from the cached data steps, "
           "the same tuned graph): the relevance model out of fold, paired per query",
           lambda r: "MRR all {:+.3f} [{:+.3f}, {:+.3f}] (needs >= +0.005), OpenHands check {:+.3f} (needs >= -0.01)".format(
               *r["paired_per_query"]["all"]["mrr difference [mean, 2.5%, 97.5%]"],
               r["paired_per_query"]["check: openhands"]["mrr difference [mean, 2.5%, 97.5%]"][0])
                     + f"; ships: {'yes' if r['ships'] else 'no'}"),
    Figure("second-encoder-trial.json", "a second encoder beside MiniLM, its ceiling: the tuned MiniLM's dense features "
           "read beside MiniLM's by the relevance model, out of fold (2,415 training queries; OpenHands a check)",
           lambda r: "MRR all {:.3f} -> {:.3f}, OpenHands check {:.3f} -> {:.3f}".format(
               *(r["figures"][m][k]["mrr"] for k in ("all", "check: openhands") for m in ("shipped", "with tuned")))
                     + f"; worth building: {'yes' if r['rule']['worth_building'] else 'no'}"),
    Figure("encoder-dev-guard.json", "the tuned encoder's dev guard: each build's models scored once on dev, MRR "
           "MiniLM -> tuned (a loss stops it only where its 95% paired interval lies below 0)",
           lambda r: "; ".join(f"{name} {s['mrr minilm']:.3f} -> {s['mrr tuned']:.3f}" for name, s in r["sets"].items())
                     + "; ships: {}".format("yes" if r["ships"] else "no")),
    Figure("versus-97be416.json", "cost against 97be416, side by side in one run (4 users of the 300 SWE-ContextBench "
           "trajectories; this checkout / 97be416)",
           lambda r: "; ".join(f"{name} {row['ratio']}x{'' if 'met' not in row else (' (met)' if row['met'] else ' (NOT met)')}"
                               for name, row in r["figures"].items() if row.get("ratio") is not None)),
    Figure("ranker-without-projects.json", "what training on the dated projects costs the agent sessions: the shipped model "
           "(today's features, projects in its data) against the same trained without them, same folds, 509 session queries",
           lambda r: "session hit@1 {:.3f} with projects, {:.3f} without; OpenHands check {:.3f} / {:.3f}; commits {:.3f} / {:.3f}".format(
               r["shipped_with_projects"]["session"]["hit@1"], r["without_projects"]["session"]["hit@1"],
               r["shipped_with_projects"]["openhands_check"]["hit@1"], r["without_projects"]["openhands_check"]["hit@1"],
               r["shipped_with_projects"]["commit"]["hit@1"], r["without_projects"]["commit"]["hit@1"])),
    Figure("decisions.json", "decision reader on 85 decisions and 84 look-alikes (targets >= 0.90 and <= 0.05)",
           decisions_read),
    Figure("decisions-suite2.json", "decision reader on a second suite (132 decisions, 132 look-alikes from agent logs, commit "
           "subjects, chat, notes, docs, tickets; issue 49, scored once)",
           decisions_read),
    Figure("decisions-suite3.json", "decision reader on a third suite (150 decisions, 150 look-alikes from seven sources; "
           "issue 53, written from a brief alone, scored once; the first two are spent)",
           decisions_read),
    Figure("decisions-suite4.json", "decision reader on a fourth suite (150 decisions, 150 look-alikes from seven sources; "
           "issue 55, written from a brief alone by a helper who wrote no training text, scored once per reader)",
           decisions_read),
    Figure("decisions-suite4-three-files.json", "the reader before issue 55's training texts, same suite",
           decisions_read),
    Figure("decisions-suite5.json", "decision reader on a fifth suite (150 decisions, 150 look-alikes; issue 55, by a "
           "helper who wrote no training text, from the fourth's brief; scored once per reader), the reader on five files",
           decisions_read),
    Figure("decisions-suite5-four-files.json", "the reader on four files, same suite",
           decisions_read),
    Figure("decisions-phrases.json", "the phrase readings it replaced, same suite",
           decisions_read),
    Figure("timeline-quiet.json", "quiet on an absent subject, out of fold (565 dev questions, 48 absent)",
           lambda r: "answered kept {:.3f}, absent quiet {:.3f}".format(
               r["calibration"]["out_of_fold"]["present_kept"], r["calibration"]["out_of_fold"]["absent_quiet"])),
    Figure("memoryarena.json", "dependency recall per domain (synthetic sample)",
           lambda r: ", ".join(f"{d} {f2(v['dependency_recall'])}" for d, v in r["domains"].items())),
    Figure("memoryarena-budget100.json", "the same with a 100-token budget",
           lambda r: ", ".join(f"{d} {f2(v['dependency_recall'])}" for d, v in r["domains"].items())),
    # Speed and robustness.
    Figure("latency.json", "Search at 1,000 items (top_k 100)", latency_at(1000)),
    Figure("latency.json", "Search at 20,000 items", latency_at(20000)),
    Figure("restart.json", "Search after a restart on an un-compacted store (300 trajectories)", restart),
    Figure("fragments.json", "Search after small sequential Adds vs a compacted table (C / B)",
           lambda r: f"p50 {r['ratio_C_over_B']['p50']:.2f}x, p95 {r['ratio_C_over_B']['p95']:.2f}x (target p95 <= 1.5x)"),
    Figure("ingest.json", "all 300 trajectories through HTTP Add, 8 sessions at a time",
           lambda r: f"{r['wall_s']} s ({r['messages_per_s']} messages/s), {len(r['errors'])} errors, "
                     f"Add p95 {ms(r['add_ms']['p95'])}"),
    Figure("git_ingest.json", "reading a synthetic 5,000-commit history into experiences (no store)",
           lambda r: f"{r['total_wall_s']} s ({r['iter_changes']['wall_s']} s reading, "
                     f"{r['commit_to_experience']['wall_s']} s building)"),
    Figure("load-32x64.json", "32 Add + 64 Search clients, 60 s, 20k preload (thread defaults chosen here)", load),
    Figure("load-32x64-workers2.json", "the same with two worker processes", load),
    Figure("load-64x256.json", "64 Add + 256 Search clients", load),
    Figure("load-64x256-shed.json", "the same with bounds of 32 Adds and 64 Searches in flight", load),
    Figure("load-cold.json", "32 + 64 clients from a cold start (empty data directory)", load),
    Figure("cli_latency.json", "a first answer: cold `codemem search`, beside `serve`, MCP first call",
           lambda r: f"p50 {r['cold_search']['p50_s']} s, {r['search_with_server']['p50_s']} s, "
                     f"{r['mcp_first_call']['p50_s']} s"),
    Figure("ui_latency.json", "the /ui pages over 300 experiences, worst p95",
           lambda r: f"{r['worst_p95_ms']:.0f} ms (target {r['target_p95_ms']:.0f} ms)"),
    Figure("experience_stats.json", "experience cards of the 300 trajectories", experience_files),
    Figure("scale.json", "N users x one instance (300 trajectories) into one server: 1 user", scale_at(1)),
    Figure("scale.json", "the same, 4 users", scale_at(4)),
    Figure("scale.json", "the same, 10 users", scale_at(10)),
    Figure("scale.json", "Add throughput over the scale run, 8 sessions at a time", scale_add),
    Figure("kill.json", "a multi-user ingest SIGKILLed at random points, restarted each time",
           lambda r: f"{r['users']} users, {r['tokens_total'] / 1e6:.0f}M tokens, {r['kill_count']} kills: "
                     f"{r['acknowledged']:,} Adds acknowledged, {r['acknowledged_lost']} lost, "
                     f"{r['acknowledged_stored_twice']} stored twice"),
    Figure("large_messages.json", "one 2 MB message per Add: slowest of each shape, then found by a Search",
           lambda r: ", ".join(f"{name} {s['add_s_max']} s ({s['found']}/{s['runs']} found)"
                               for name, s in r["shapes"].items()) + f" (target {r['target_s']:.0f} s)"),
    Figure("large_messages-main.json", "the same on the code before issue 42 (its commit, one run each, minutes apart)",
           lambda r: ", ".join(f"{name} {s['add_s_max']} s" for name, s in r["shapes"].items())),
    Figure("proxy_load.json", "the track's heaviest load through the shipped Caddyfile (targets: all 200, "
           "health p95 <= 1 s, no 503, peak <= 2.5 GB)", proxy_load),
    Figure("proxy_load-unbounded.json", "the same with no bound on the Add bytes in flight", proxy_load),
    Figure("proxy_load-192mib.json", "the same with a 192 MiB bound", proxy_load),
    Figure("proxy_load-b48dc5b.json", "the same on the code and Caddyfile before issue 54 (its commit)", proxy_load),
    Figure("proxy_load-4mb-messages.json", "the same, each Add's tool outputs 4 MB messages", proxy_load),
    Figure("proxy_load-20kb-messages.json", "the same, each Add's tool outputs 20 kB messages",
           proxy_load),
    Figure("install_size.json", "what `make setup` installs on a clean clone (the service: its virtualenv and its own packages)",
           lambda r: f"{r['service_gb']} GB (virtualenv {r['venv_gb']} GB, packages {r['packages_mb']} MB) in "
                     f"{r['setup_s']:.0f} s (pip's cache warm); largest: "
                     + ", ".join(f"{k} {v} MB" for k, v in list(r["largest_packages_mb"].items())[:4])),
    Figure("read-check.json", "one row read on a store of many versions, with and without the version check",
           lambda r: ", ".join(f"{k} {v['cpu_ms']} ms CPU" for k, v in r["per_read"].items())),
)
