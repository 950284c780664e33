"""What every result file under eval/results/ records about how it was made: the exact
command, the UTC date, the git commit and whether the tree differed from it, and the
machine (cores, platform, memory, load); and the one writer of result files.

    prov = provenance("eval.load.latency", argv)      # at the start of a run
    write_result(out, result, prov)                  # at the end: load and wall time added
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from eval._paths import REPO_ROOT

# What the service runs: edits here change the figures. eval/ and tests/ are listed apart.
SERVICE_PATHS = ("codemem", "api", "parsers", "integrations", "cli", "pyproject.toml")
PROVENANCE_KEYS = ("command", "date_utc", "git_head", "git_dirty", "service_dirty", "machine")


def _git(*args: str) -> str | None:
    try:
        r = subprocess.run(["git", *args], capture_output=True, text=True, timeout=10, cwd=REPO_ROOT)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout if r.returncode == 0 else None


def git_head() -> str | None:
    out = _git("rev-parse", "HEAD")
    return (out.strip() or None) if out is not None else None


def git_dirty(paths: Sequence[str] = ()) -> bool | None:
    """Uncommitted changes (untracked files included) in the tree, or under `paths`."""
    out = _git("status", "--porcelain", "--", *paths) if paths else _git("status", "--porcelain")
    return None if out is None else bool(out.strip())


def memory_total_gb() -> float | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024**2, 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


def machine() -> dict[str, object]:
    return {
        "cpu_count": os.cpu_count(),
        "affinity_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "memory_gb": memory_total_gb(),
        "loadavg_at_start": [round(x, 2) for x in os.getloadavg()],
    }


def command_line(module: str, argv: Sequence[str] | None) -> str:
    """The command that reproduces the run: `python -m <module> <args>` (or the script path)."""
    args = list(sys.argv[1:] if argv is None else argv)
    head = ["python", module] if module.endswith(".py") else ["python", "-m", module]
    return shlex.join([*head, *args])


def provenance(module: str, argv: Sequence[str] | None = None) -> dict[str, object]:
    return {
        "command": command_line(module, argv),
        "date_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "git_head": git_head(),
        "git_dirty": git_dirty(),
        "service_dirty": git_dirty(SERVICE_PATHS),
        "machine": machine(),
        "_t0": time.perf_counter(),
    }


def finish(prov: dict[str, object]) -> dict[str, object]:
    """The provenance with the load at the end and the run's wall time, ready for JSON."""
    out = {k: v for k, v in prov.items() if k != "_t0"}
    machine = prov["machine"]
    assert isinstance(machine, dict)
    out["machine"] = {**machine, "loadavg_at_end": [round(x, 2) for x in os.getloadavg()]}
    t0 = prov.get("_t0")
    out["wall_s"] = round(time.perf_counter() - t0, 1) if isinstance(t0, float) else None
    return out


def header(prov: dict[str, object]) -> str:
    """One line for a markdown report."""
    m = prov["machine"]
    head = str(prov.get("git_head") or "?")[:10]
    # Uncommitted result files of earlier runs make the tree dirty without changing what runs.
    dirty = (" + uncommitted service edits" if prov.get("service_dirty")
             else " + uncommitted files outside the service" if prov.get("git_dirty") else "")
    return (f"{prov['date_utc']}, git {head}{dirty}, {m['cpu_count']} cores, {m['memory_gb']} GB, "  # type: ignore[index]
            f"load {m['loadavg_at_start'][0]}")  # type: ignore[index]


def write_result(path: Path | str, result: dict[str, Any], prov: dict[str, object], *,
                 markdown: Callable[[dict[str, Any]], str] | None = None, indent: int = 2) -> Path:
    """Write one run's result: `result` with its finished provenance as JSON at `path` and,
    given `markdown`, its report (built from the result, provenance included) beside it as
    `.md`. The provenance leads the file and is also set in `result`. The one way every eval
    command writes, so every file carries the same record."""
    rest = {k: v for k, v in result.items() if k != "provenance"}
    result.clear()
    result.update({"provenance": finish(prov), **rest})
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=indent, default=str) + "\n")
    if markdown is not None:
        out.with_suffix(".md").write_text(markdown(result))
    return out
