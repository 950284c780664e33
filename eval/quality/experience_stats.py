"""Experience-card statistics over the SWE-ContextBench Lite trajectories.

For every transcript in the tar: render it (``codemem.importers.claude_code``), build its experience,
and compare the card's edited files with the session's final patch, read independently of
the builder from the raw events: the output of the last Bash call whose command runs
``git diff`` and whose output holds a ``diff --git`` section. Gitlink sections (a nested
repository's ``Subproject commit`` entry) are not file edits and are left out on both sides.

As a check of the builder's own fallback, each session is also built a second time with
its ``git diff`` calls and outputs removed, so its edited files come from the edits and the
scratch rules alone; misses where the patch only adds top-level scratch files the agent
committed (``git add -A`` of its reproduction scripts) are counted apart.

Usage: python -m eval.quality.experience_stats [path/to/trajectories.tar.xz]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tarfile
import time
from collections import Counter
from pathlib import Path

from codemem.contract.types import Message  # noqa: E402
from codemem.experience import build_experience  # noqa: E402
from codemem.experience.building.checkout_paths import is_scratch_name  # noqa: E402
from codemem.importers.claude_code import render_claude_code_events  # noqa: E402
from eval._paths import RESULTS, SWE_LITE_TAR  # noqa: E402
from eval._provenance import provenance, write_result  # noqa: E402
from eval._stats import percentile  # noqa: E402

DEFAULT_TAR = SWE_LITE_TAR
_GIT_DIFF = re.compile(r"\bgit\b(?:\s+-C\s+\S+|\s+--no-pager|\s+-c\s+\S+)*\s+diff\b")
_DIFF_FILE = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.M)
_SECTION = re.compile(r"^diff --git ", re.M)
_GITLINK = re.compile(r"^[+-]Subproject commit |mode 160000$", re.M)


def reference_patch_files(lines: list[bytes]) -> list[str] | None:
    """Files of the last ``git diff`` output in the raw events; None if there is none."""
    commands: dict[str, str] = {}
    last: str | None = None
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        message = event.get("message") if isinstance(event, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use" and block.get("name") == "Bash":
                commands[block.get("id", "")] = str(block.get("input", {}).get("command", ""))
            elif block.get("type") == "tool_result":
                command = commands.get(block.get("tool_use_id", ""), "")
                body = block.get("content")
                text = body if isinstance(body, str) else json.dumps(body)
                if _GIT_DIFF.search(command) and "diff --git" in text:
                    last = text
    if last is None:
        return None
    starts = [m.start() for m in _SECTION.finditer(last)]
    sections = [
        last[s : (starts[i + 1] if i + 1 < len(starts) else len(last))]
        for i, s in enumerate(starts)
    ]
    files: list[str] = []
    for section in sections:
        m = _DIFF_FILE.search(section)
        if m and not _GITLINK.search(section) and m.group(2) not in files:
            files.append(m.group(2))
    return files


def _without_git_diff(messages: list[Message]) -> list[Message]:
    """The session as if the agent had never run ``git diff``: those calls and results go."""
    out: list[Message] = []
    dropping = False
    for message in messages:
        text = message.text
        if text.startswith("Tool call Bash ") and _GIT_DIFF.search(text):
            dropping = True
            continue
        if dropping and text.startswith("Tool result (Bash"):
            dropping = False
            continue
        out.append(message)
    return out


def _dist(values: list[int]) -> str:
    return (
        f"min {min(values)} p50 {percentile(values, 50):.0f} p95 {percentile(values, 95):.0f} "
        f"max {max(values)} mean {statistics.mean(values):.1f}"
    )


def _only_committed_scratch(edits: list[str], patch: list[str]) -> bool:
    """The patch holds the edits plus scratch files the agent committed with ``git add -A``."""
    extra = set(patch) - set(edits)
    return set(edits) <= set(patch) and bool(extra) and all(is_scratch_name(f) for f in extra)


def stats(tar_path: Path) -> dict[str, object]:
    sizes: list[int] = []
    steps: list[int] = []
    kinds: Counter[str] = Counter()
    tests: Counter[str] = Counter()
    with_symbols = with_root_cause = messages_total = 0
    with_patch = matched = fallback_matched = fallback_scratch_only = 0
    mismatches: list[str] = []
    fallback_misses: list[str] = []
    build_seconds = build_cpu = 0.0
    started = time.perf_counter()
    with tarfile.open(tar_path, mode="r|*") as archive:
        for member in archive:
            handle = archive.extractfile(member) if member.isfile() else None
            if handle is None or not member.name.endswith(".jsonl"):
                continue
            lines = handle.read().splitlines()
            transcript = render_claude_code_events(lines)
            reference = reference_patch_files(lines)
            t0, c0 = time.perf_counter(), time.process_time()
            experience = build_experience(transcript.messages)
            build_seconds += time.perf_counter() - t0
            build_cpu += time.process_time() - c0
            card = experience.card
            messages_total += len(transcript.messages)
            sizes.append(len(card.text))
            steps.append(len(experience.steps))
            kinds.update(step.kind for step in experience.steps)
            tests[str(card.tests_passed)] += 1
            with_symbols += bool(card.edited_symbols)
            with_root_cause += bool(card.root_cause)
            if reference is None:
                continue
            with_patch += 1
            if sorted(card.edited_files) == sorted(reference):
                matched += 1
            else:
                mismatches.append(f"{member.name}: card {card.edited_files} patch {reference}")
            fallback = build_experience(_without_git_diff(transcript.messages)).card.edited_files
            if sorted(fallback) == sorted(reference):
                fallback_matched += 1
            elif _only_committed_scratch(fallback, reference):
                fallback_scratch_only += 1
            else:
                fallback_misses.append(f"{member.name}: edits {fallback} patch {reference}")
    total = time.perf_counter() - started
    n = len(sizes)
    result: dict[str, object] = {
        "tar": str(tar_path), "sessions": n, "messages": messages_total,
        "card_chars": _summary(sizes), "steps_per_session": _summary(steps), "step_kinds": dict(sorted(kinds.items())),
        "with_edited_symbols": with_symbols, "with_root_cause": with_root_cause,
        "tests_passed": dict(sorted(tests.items())), "with_final_git_diff": with_patch,
        "edited_files_equal_final_diff": matched, "without_git_diff_equal": fallback_matched,
        "without_git_diff_scratch_only": fallback_scratch_only, "without_git_diff_other_misses": len(fallback_misses),
        "build_s": round(build_seconds, 1), "build_cpu_s": round(build_cpu, 1), "total_s": round(total, 1),
        "mismatches": mismatches[:20], "fallback_misses": fallback_misses[:20],
    }
    print(f"sessions: {n}, messages: {messages_total}")
    print(f"card chars: {_dist(sizes)}")
    print(f"steps per session: {_dist(steps)}; by kind: {dict(sorted(kinds.items()))}")
    print(
        f"cards with edited symbols: {with_symbols}/{n}; with a root cause: {with_root_cause}/{n}; "
        f"tests_passed: {dict(sorted(tests.items()))}"
    )
    print(f"sessions with a final git diff: {with_patch}/{n}; without one: {n - with_patch}")
    print(
        f"edited files == final patch files: {matched}/{with_patch} "
        f"({matched / max(with_patch, 1):.1%})"
    )
    print(
        f"git diff removed (edits + scratch rules alone): equal {fallback_matched}/{with_patch} "
        f"({fallback_matched / max(with_patch, 1):.1%}); the patch adds only scratch files "
        f"the agent committed: {fallback_scratch_only}; other misses: {len(fallback_misses)}"
    )
    print(
        f"build_experience, all sessions: {build_seconds:.1f} s wall, {build_cpu:.1f} s CPU; "
        f"whole run (tar read, rendering, reference, fallback builds) {total:.1f} s"
    )
    for line in mismatches[:20]:
        print("  MISMATCH", line)
    for line in fallback_misses[:20]:
        print("  FALLBACK", line)
    return result


def _summary(values: list[int]) -> dict[str, float | int | None]:
    if not values:
        return {"n": 0, "p50": None, "p95": None, "max": None}
    s = sorted(values)
    return {"n": len(s), "p50": s[len(s) // 2], "p95": s[min(len(s) - 1, int(0.95 * len(s)))], "max": s[-1]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("tar", nargs="?", type=Path, default=DEFAULT_TAR, help="the trajectories tarball")
    ap.add_argument("--out", type=Path, default=RESULTS / "experience_stats.json")
    args = ap.parse_args(argv)
    prov = provenance("eval.quality.experience_stats", argv)
    result = stats(args.tar)
    write_result(args.out, result, prov)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
