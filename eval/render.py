"""Render docs/results.md from the result files: every figure the documentation quotes
(`eval.figures`) and the learned ranker's training figures from its card, each beside its
result file, the commit and date it was written at, whether the tree was dirty, the machine
and its in-sample / validation / held-out / training label; then, from the git history,
which files were written before later changes to the service.

    python -m eval.render            # writes docs/results.md
    python -m eval.render --check    # exit 1 when docs/results.md is not what the results give

The page is in two parts. The first depends on eval/results/ alone, so `--check` (and
tests/test_docs.py) can require it to be current. The second counts, for each file, the
commits since its own that touched codemem/, api/ or parsers/: it changes with every such
commit, so it is rendered but never compared.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eval._paths import REPO_ROOT, RESULTS
from eval.figures import FIGURES, FILE_LABELS, LABELS, RETIRED, Figure

PAGE = REPO_ROOT / "docs" / "results.md"
MODEL_CARD = REPO_ROOT / "codemem" / "ranking" / "models" / "ranker.json"
STALE_MARK = "## Service changes since each file was written"
CODE_PATHS = ("codemem", "api", "parsers")

# Commands recorded before eval/ became packages, and what runs them now.
MOVED = {"python -m eval.ceiling": "python -m eval.replay.ceiling",
         "python -m eval.relevance_cv": "python -m eval.replay.relevance_cv",
         "python -m eval.ingest_bench": "python -m eval.load.ingest",
         "python eval/git_ingest_bench.py": "python -m eval.load.git_ingest",
         "python eval/experience_stats.py": "python -m eval.quality.experience_stats",
         **{f"python -m eval.{m}": f"python -m eval.load.{m}"
            for m in ("latency", "restart", "cli_latency", "ui_latency", "fragments")},
         **{f"python -m eval.{m}": f"python -m eval.quality.{m}"
            for m in ("locomo", "memoryarena", "past_fixes_cv", "past_fixes", "staleness")}}


def result_files(results: Path = RESULTS) -> list[Path]:
    return sorted(results.glob("*.json"))


def provenance_of(result: dict[str, Any]) -> dict[str, Any]:
    """The run's provenance; a file merged from several runs keeps one per run
    (`provenance_<phases>`), and the last of them is the one that wrote it."""
    if isinstance(result.get("provenance"), dict):
        return result["provenance"]
    runs = [v for k, v in sorted(result.items()) if k.startswith("provenance_") and isinstance(v, dict)]
    if not runs:
        raise ValueError("no provenance in the result file")
    return runs[-1]


def tree(prov: dict[str, Any]) -> str:
    if prov.get("service_dirty"):
        return "uncommitted service edits"
    return "other files uncommitted" if prov.get("git_dirty") else "clean"


def machine(prov: dict[str, Any]) -> str:
    m = prov.get("machine") or {}
    load = (m.get("loadavg_at_start") or ["?"])[0]
    return f"{m.get('cpu_count', '?')} cores, {m.get('memory_gb', '?')} GB, load {load}"


def short(sha: object) -> str:
    return str(sha or "?")[:7]


def cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def current_command(command: str) -> str:
    """The recorded command under the module name that runs it now, marked when renamed."""
    program, _, rest = command.partition(" --")
    head = program.split(" ", 3)
    name = " ".join(head[:3]) if program.startswith("python -m ") else " ".join(head[:2])
    if name in MOVED:
        return f"`{cell(MOVED[name] + program[len(name):] + (' --' + rest if rest else ''))}` (recorded as `{name}`)"
    return f"`{cell(command)}`"


def figure_rows(figures: Sequence[Figure], loaded: dict[str, dict[str, Any]]) -> list[str]:
    rows = ["| figure | value | label | result file | commit | date (UTC) | tree | machine |",
            "|---|---|---|---|---|---|---|---|"]
    for f in figures:
        result = loaded[f.file]
        prov = provenance_of(result)
        rows.append(f"| {cell(f.what)} | {cell(f.read(result))} | {f.label_of()} | `{f.file}` | "
                    f"`{short(prov.get('git_head'))}` | {str(prov.get('date_utc', '?'))[:16]} | "
                    f"{tree(prov)} | {machine(prov)} |")
    return rows


def file_rows(loaded: dict[str, dict[str, Any]]) -> list[str]:
    rows = ["| result file | label | command | commit | date (UTC) | tree | wall |", "|---|---|---|---|---|---|---:|"]
    for name, result in loaded.items():
        prov = provenance_of(result)
        command = current_command(str(prov.get("command", "?")))
        if name in RETIRED:
            command += f" (retired: `{RETIRED[name]}` is in git history)"
        wall = prov.get("wall_s")
        rows.append(f"| `{name}` | {FILE_LABELS[name]} | {command} | `{short(prov.get('git_head'))}` | "
                    f"{str(prov.get('date_utc', '?'))[:16]} | {tree(prov)} | {'' if wall is None else f'{wall:,.0f} s'} |")
    return rows


def training_rows(card: dict[str, Any]) -> list[str]:
    """The relevance model's cross-validated figures on its training data, per kind of
    experience, from its card (written by the training run)."""
    trained = card["trained_on"]
    rows = [f"The relevance model's card (`{MODEL_CARD.relative_to(REPO_ROOT)}`, model `{card['model_id']}`, "
            f"trained at commit `{short(trained['commit'])}`, tree {'clean' if trained['clean_tree'] else 'dirty'}; "
            f"{trained['queries']} queries, {trained['ranked_queries']} with a related experience in memory, over "
            f"{trained['repositories']} repositories): {card['cv']['note']}. `train/ranker/README.md` says how it was "
            "made.", "",
            "| kind | ranking | queries | hit@1 | hit@5 | MRR | label |", "|---|---|---:|---:|---:|---:|---|"]
    for kind, table in card["cv"]["by_kind"].items():
        for name, f in table.items():
            rows.append(f"| {kind} | {name} | {f['queries']} | {f['hit@1']:.3f} | {f['hit@5']:.3f} | {f['mrr']:.3f} "
                        "| training |")
    return rows


def render_results(results: Path = RESULTS, figures: Sequence[Figure] = FIGURES,
                   card: Path = MODEL_CARD) -> str:
    """The part of the page that depends on the result files only."""
    loaded = {p.name: json.loads(p.read_text()) for p in result_files(results)}
    unlabelled = sorted(set(loaded) - set(FILE_LABELS))
    if unlabelled:
        raise ValueError(f"result files without a label in eval/figures.py FILE_LABELS: {unlabelled}")
    missing = sorted({f.file for f in figures} - set(loaded))
    if missing:
        raise ValueError(f"figures read from result files that are not there: {missing}")
    lines = [
        "# Results",
        "",
        "Generated by `python -m eval.render` from `eval/results/*.json`; do not edit by hand.",
        "`make results` re-runs the benchmarks that take a few minutes and renders this page again;",
        "the commands of the others are in [eval/README.md](../eval/README.md). Each figure is read from",
        "its result file, which records the command, the commit, the date, the tree and the machine.",
        "",
        "| label | meaning |",
        "|---|---|",
        *(f"| {name} | {meaning} |" for name, meaning in LABELS.items()),
        "",
        "## Figures",
        "",
        *figure_rows(figures, loaded),
        "",
        "## Training figures",
        "",
        *training_rows(json.loads(card.read_text())),
        "",
        "## Result files",
        "",
        *file_rows(loaded),
        "",
    ]
    return "\n".join(lines)


def commits_since(sha: str, paths: Sequence[str] = CODE_PATHS, root: Path = REPO_ROOT) -> int | None:
    """Commits after `sha` up to HEAD that touched `paths`; None when `sha` is not in the history."""
    try:
        r = subprocess.run(["git", "rev-list", "--count", f"{sha}..HEAD", "--", *paths],
                           capture_output=True, text=True, timeout=30, cwd=root)
    except (OSError, subprocess.SubprocessError):
        return None
    return int(r.stdout.strip()) if r.returncode == 0 and r.stdout.strip().isdigit() else None


def render_staleness(results: Path = RESULTS, root: Path = REPO_ROOT) -> str:
    """Which result files were written before later changes to the service code."""
    head = subprocess.run(["git", "rev-parse", "--short=7", "HEAD"], capture_output=True, text=True,
                          cwd=root).stdout.strip() or "?"
    lines = [STALE_MARK, "",
             f"Counted at `{head}` when this page was rendered: commits after each file's own that touched "
             f"{', '.join(f'`{p}/`' for p in CODE_PATHS)}. A file marked **stale** describes older code; "
             "its figures hold for the commit it names, not necessarily for this one.", "",
             "| result file | written at | service commits since | |", "|---|---|---:|---|"]
    for path in result_files(results):
        sha = str(provenance_of(json.loads(path.read_text())).get("git_head") or "")
        n = commits_since(sha, root=root) if sha else None
        mark = "not in this history" if n is None else "**stale**" if n > 0 else "current"
        lines.append(f"| `{path.name}` | `{short(sha)}` | {'' if n is None else n} | {mark} |")
    return "\n".join(lines) + "\n"


def render(results: Path = RESULTS) -> str:
    return render_results(results) + "\n" + render_staleness(results)


def results_part(page: str) -> str:
    """The part of a rendered page that `--check` compares."""
    return page.split(STALE_MARK, 1)[0].rstrip("\n") + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m eval.render", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=PAGE)
    p.add_argument("--check", action="store_true", help="compare with --out instead of writing it")
    args = p.parse_args(argv)
    if args.check:
        current = args.out.read_text() if args.out.exists() else ""
        if results_part(current) != results_part(render_results()):
            print(f"{args.out} is not what eval/results gives: run python -m eval.render", file=sys.stderr)
            return 1
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render())
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
