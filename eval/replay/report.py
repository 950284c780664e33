"""Table (text / markdown) and plot of the replay's summaries."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from eval.replay.data import CONDITION_KINDS
from eval.replay.metrics import TOKEN_NOTE, WINDOW_TOKENS, Summary

HEAD = ["system", "condition", "n", "hit@1", "useful@1", "hit@5", "MRR", "found", "itemMRR", "tok<gold p50", "gold%8k",
        "tok total p50", "items p50", "sess p50", "p50 ms", "p95 ms", "latency"]

# How each system's latency was taken: they are not the same measurement.
HTTP = "HTTP"
IN_PROCESS = "in-process"

LEGEND = (f"{TOKEN_NOTE}. Every system is scored at trajectory level by the same code: its answer is reduced to "
          "its distinct trajectories (session_ids) in order of first appearance; hit@k: a gold trajectory among the "
          "first k of them; MRR: 1 / rank of the first gold trajectory (0 when none); found: queries whose answer "
          "holds any gold trajectory at all (count and share); itemMRR: MRR by item position, for the record; "
          "tok<gold: tokens returned before the first gold item (median over found queries); gold%8k: "
          f"mean share of gold tokens in the first {WINDOW_TOKENS:,} tokens returned; tok total / items / sess: medians "
          "per query; absent: nothing relevant is in memory, so only sizes count. Latency is not comparable across "
          f"the column 'latency': {HTTP} = codemem's Search end to end over HTTP on loopback, measured by the client "
          f"(query embedding, store, answer building, JSON, HTTP); {IN_PROCESS} = a baseline's query in this process "
          "(tokenize or embed the query, score its prebuilt index), no HTTP, no answer building.")


def is_codemem(system: str) -> bool:
    """codemem itself, by whichever ranking ("codemem", "codemem-learned")."""
    return system == "codemem" or system.startswith("codemem-")


def latency_kind(system: str) -> str:
    return HTTP if is_codemem(system) else IN_PROCESS


def _f(v: float | None, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def row(s: Summary) -> list[str]:
    found = "-" if s.found_share is None else f"{s.found} ({s.found_share:.0%})"
    return [s.system, s.condition, str(s.queries), _f(s.hit1, ".2f"), _f(s.useful1, ".2f"), _f(s.hit5, ".2f"), _f(s.mrr, ".3f"),
            found, _f(s.item_mrr, ".3f"), _f(s.tokens_before_gold_p50, ",.0f"),
            _f(s.gold_share_8k, ".2f"), _f(s.tokens_total_p50, ",.0f"), _f(s.items_p50, ".0f"), _f(s.sessions_p50, ".0f"),
            _f(s.latency_p50_ms, ".1f"), _f(s.latency_p95_ms, ".1f"), latency_kind(s.system)]


def ordered(summaries: Sequence[Summary]) -> list[Summary]:
    """Rows grouped by condition (relevant first), codemem before the baselines."""
    order = {k: i for i, k in enumerate(CONDITION_KINDS)}
    return sorted(summaries, key=lambda s: (order.get(s.condition, 99), not is_codemem(s.system), s.system))


def text_table(summaries: Sequence[Summary]) -> str:
    rows = [HEAD] + [row(s) for s in ordered(summaries)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEAD))]
    lines = ["  ".join(c.ljust(w) if i < 2 or i == len(HEAD) - 1 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
             for r in rows]
    return "\n".join([lines[0], "-" * len(lines[0]), *lines[1:]])


def markdown_table(summaries: Sequence[Summary]) -> str:
    lines = ["| " + " | ".join(HEAD) + " |", "|" + "|".join(["---"] * 2 + ["---:"] * (len(HEAD) - 3) + ["---"]) + "|"]
    lines += ["| " + " | ".join(row(s)) + " |" for s in ordered(summaries)]
    return "\n".join(lines)


def markdown(summaries: Sequence[Summary], command: str, header: str, notes: Sequence[str]) -> str:
    parts = ["# Retrieval replay (SWE-ContextBench Lite, links_dev.json)", "", header, "", f"`{command}`", "",
             markdown_table(summaries), "", LEGEND]
    if notes:
        parts += ["", "Notes:", *[f"- {n}" for n in notes]]
    return "\n".join(parts) + "\n"


def plot(summaries: Sequence[Summary], path: Path, title: str) -> None:
    """hit@1 / hit@5 / MRR per condition with one bar per system, and tokens returned per query."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    systems = list(dict.fromkeys(s.system for s in ordered(summaries)))
    conds = [c for c in CONDITION_KINDS if any(s.condition == c for s in summaries)]
    ranked = [c for c in conds if c != "absent"]
    by = {(s.system, s.condition): s for s in summaries}
    fig, axes = plt.subplots(2, 2, figsize=(13, 8.5))
    width = 0.8 / max(1, len(systems))
    panels = [("hit1", "hit@1"), ("hit5", "hit@5"), ("mrr", "MRR")]
    for ax, (attr, label) in zip(axes.flat[:3], panels, strict=True):
        for i, sysname in enumerate(systems):
            vals = [(getattr(by[(sysname, c)], attr) or 0.0) if (sysname, c) in by else 0.0 for c in ranked]
            xs = [j + (i - (len(systems) - 1) / 2) * width for j in range(len(ranked))]
            bars = ax.bar(xs, vals, width, label=sysname)
            ax.bar_label(bars, fmt="%.2f", fontsize=7, padding=1)
        ax.set_xticks(range(len(ranked)), ranked)
        ax.set_ylim(0, 1.08)
        ax.set_title(label)
        ax.grid(axis="y", alpha=0.3)
    ax = axes.flat[3]
    for i, sysname in enumerate(systems):
        vals = [(by[(sysname, c)].tokens_total_p50 or 0.0) if (sysname, c) in by else 0.0 for c in conds]
        xs = [j + (i - (len(systems) - 1) / 2) * width for j in range(len(conds))]
        ax.bar(xs, [max(v, 1.0) for v in vals], width, label=sysname)
    ax.set_xticks(range(len(conds)), conds)
    ax.set_yscale("log")
    ax.set_title("tokens returned per query (median, chars/4, log scale)")
    axes.flat[0].set_ylabel("trajectory level, same code for all")
    ax.grid(axis="y", alpha=0.3)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(systems), fontsize=9)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
