"""The first `make serve` says what it is about to do before the long install, and pip's
progress shows while it runs; pip compiles no bytecode and `cli.bytecode` then compiles what
codemem imports (read from make's dry run into a virtualenv that does not exist)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from cli.bytecode import PACKAGES

ROOT = Path(__file__).resolve().parents[1]


def test_the_first_serve_announces_the_install_and_shows_pips_progress(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    # Run by `make test` too (CI): no "Entering directory" lines from the outer make's level.
    plan = subprocess.run(["make", "--no-print-directory", "-n", "serve", f"VENV={venv}"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout.splitlines()
    install = next(i for i, line in enumerate(plan) if "pip install" in line and " -e ." in line)
    said = " ".join(plan[:install])
    assert said.startswith("echo") and "installing codemem" in said and "GB" in said and "minutes" in said
    assert "--quiet" not in plan[install] and "--progress-bar on" in plan[install]
    assert all("--no-compile" in line for line in plan if "pip install" in line)
    assert plan[install + 1].endswith("python -m cli.bytecode")
    assert any(line.endswith(f"-m compileall -q {' '.join(PACKAGES)}") for line in plan[install:])
    assert plan[-1].endswith("codemem serve")


def test_setup_compiles_codemems_modules_again_when_one_changes(tmp_path: Path) -> None:
    """After a `git pull` (a source newer than the last compile), `make setup` compiles
    codemem's own modules again and installs nothing."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    for stamp in (".installed", ".compiled"):
        (venv / stamp).touch()
    os.utime(venv / ".compiled", (0, 0))  # older than every source
    plan = subprocess.run(["make", "--no-print-directory", "-n", "setup", f"VENV={venv}"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout.splitlines()
    assert [line.split()[1:] for line in plan] == [["-m", "compileall", "-q", *PACKAGES], [str(venv / ".compiled")]]
