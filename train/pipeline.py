"""The training run as steps with cached outputs: each step is one training module run as a
process (`python -m <module> <args>`) into its own folder of the cache, named by a key of
everything that decides its output.

A step's key hashes: its module and arguments (paths written as names, so that the key is the
same on every machine), the content of the code it runs (`code`: files and folders of this
checkout, the shipped models left out so that installing a model changes no data step's key),
the content of the data files it reads (`inputs`), the commits of the mirrors it reads
(`sources`), the keys of the steps whose outputs it reads (`after`), the versions of Python and
the libraries that compute features and fit models, and, for a step that writes a model card
(`at_head`), the commit and whether the tree is clean: a card names the commit it was trained
at, so a model is rebuilt at each new commit while its data is reused.

Its output goes to `<cache>/<step>/<key[:16]>/`, and `step.json` is written there last: a
folder with it is reused as it is; one without it (an interrupted run) is run again in place,
which lets a data builder that adds up its parts (`train.past_fixes.build_data`) resume.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from train.mirrors import Source
from train.provenance import REPO_ROOT, TreeState, tree_sha256

# Written by the steps that build models: never part of a data step's key.
MODEL_DIRS = ("codemem/ranking/models", "codemem/timeline/models", "codemem/encoders/models")
LIBRARIES = ("numpy", "scipy", "scikit-learn", "lightgbm", "torch", "sentence-transformers", "lancedb")
RECORD = "step.json"

# A step's arguments from its paths: `path("out")`, `path("after:<step>")`, `path("input:<name>")`,
# `path("source:<name>")` (the mirror's git directory), `path("mirrors")`, `path("cache")`.
PathOf = Callable[[str], str]


@dataclass(frozen=True)
class Step:
    name: str
    module: str
    argv: Callable[[PathOf], list[str]]
    code: tuple[str, ...]  # paths of this checkout whose content the output depends on
    inputs: Mapping[str, Path] = field(default_factory=dict)  # data read, hashed by content
    sources: Mapping[str, Source] = field(default_factory=dict)  # mirrors read, at their commit
    after: tuple[str, ...] = ()  # steps whose outputs it reads
    at_head: bool = False  # writes a card naming the commit: keyed by the tree's state too
    env: Mapping[str, str] = field(default_factory=dict)
    # Variables set to a path by its name, as in `argv` (`"after:encoder-tuned"`): keyed by the name.
    env_paths: Mapping[str, str] = field(default_factory=dict)
    # Puts the step's output where the product reads it; returns what it wrote.
    install: Callable[[Path], list[Path]] | None = None


@dataclass
class Planned:
    step: Step
    key: str | None  # None: a source or an input is missing
    missing: list[str]  # what to fetch or provide, one line each
    out: Path | None

    @property
    def cached(self) -> bool:
        return self.out is not None and (self.out / RECORD).is_file()


def environment() -> dict[str, str]:
    """Python's version and the versions of the libraries that compute and fit."""
    versions = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "absent"
    return versions


def content_hash(path: Path) -> str:
    return tree_sha256([path], path if path.is_dir() else path.parent)


def plan(steps: Sequence[Step], cache: Path, mirrors: Path, tree: TreeState, root: Path = REPO_ROOT) -> list[Planned]:
    """Each step's key, where its output goes and what it lacks, in order (a step's `after`
    must come before it). A key depends on inputs only, never on outputs: a step whose
    upstream has yet to run has a key all the same."""
    env = environment()
    keys: dict[str, str | None] = {}
    out: list[Planned] = []
    for step in steps:
        lacking: list[str] = []
        commits: dict[str, str | None] = {}
        for name, source in step.sources.items():
            commits[name] = source.resolved(mirrors)
            if commits[name] is None:
                lacking.append(source.fetch_line(mirrors))
        inputs: dict[str, str] = {}
        for name, path in step.inputs.items():
            if path.exists():
                inputs[name] = content_hash(path)
            else:
                lacking.append(f"provide {path}  (the {name} data of step {step.name})")
        upstream = {name: keys.get(name) for name in step.after}
        if lacking or any(k is None for k in upstream.values()):
            keys[step.name] = None
            out.append(Planned(step, None, lacking, None))
            continue
        material: dict[str, Any] = {
            "step": step.name, "module": step.module, "argv": step.argv(lambda name: f"<{name}>"),
            "code": tree_sha256([root / p for p in step.code], root, skip=[root / d for d in MODEL_DIRS]),
            "inputs": inputs, "sources": commits, "after": upstream, "env": env, "environ": dict(step.env) | {k: f"<{v}>" for k, v in step.env_paths.items()},
            "tree": dict(tree) if step.at_head else None}
        key = hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()
        keys[step.name] = key
        out.append(Planned(step, key, [], cache / step.name / key[:16]))
    return out


def path_of(planned: Planned, outputs: Mapping[str, Path], cache: Path, mirrors: Path) -> PathOf:
    """The real paths behind a step's argument names."""
    def path(name: str) -> str:
        kind, _, which = name.partition(":")
        if kind == "out":
            assert planned.out is not None
            return str(planned.out)
        if kind == "after":
            return str(outputs[which])
        if kind == "input":
            return str(planned.step.inputs[which])
        if kind == "source":
            return str(planned.step.sources[which].git_dir(mirrors))
        if kind == "mirrors":
            return str(mirrors)
        if kind == "cache":
            return str(cache)
        raise KeyError(name)
    return path


def run_step(planned: Planned, argv: list[str], root: Path, env: Mapping[str, str]) -> float:
    """Run one step into its folder (`env`: its variables, over the process's), its output shown
    and kept in `log.txt`; `step.json` last."""
    assert planned.out is not None and planned.key is not None
    planned.out.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", planned.step.module, *argv]
    t0 = time.perf_counter()
    with (planned.out / "log.txt").open("a") as log:
        log.write(f"$ {' '.join(command)}\n")
        proc = subprocess.Popen(command, cwd=root, env={**os.environ, **env}, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            print(f"  [{planned.step.name}] {line}", end="", flush=True)
        code = proc.wait()
    seconds = time.perf_counter() - t0
    if code != 0:
        raise SystemExit(f"step {planned.step.name} failed (exit {code}); its log: {planned.out / 'log.txt'}")
    record = {"step": planned.step.name, "key": planned.key, "module": planned.step.module, "argv": argv,
              "seconds": round(seconds, 1), "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "machine": f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"}
    (planned.out / RECORD).write_text(json.dumps(record, indent=1) + "\n")
    return seconds


def execute(planned: Sequence[Planned], cache: Path, mirrors: Path, root: Path = REPO_ROOT,
            install: bool = True) -> dict[str, Path]:
    """Run every step not cached, in order, then install every step's output (after all of them
    ran, so that no card reads a tree a model was just written into). Returns each step's output
    folder. Every key must be known (`missing` checked first)."""
    outputs: dict[str, Path] = {}
    for p in planned:
        assert p.out is not None, f"{p.step.name}: {p.missing}"
        if p.cached:
            print(f"{p.step.name}: cached, {p.out}", flush=True)
        else:
            print(f"{p.step.name}: running python -m {p.step.module} into {p.out}", flush=True)
            path = path_of(p, outputs, cache, mirrors)
            env = {**p.step.env, **{name: path(value) for name, value in p.step.env_paths.items()}}
            seconds = run_step(p, p.step.argv(path), root, env)
            print(f"{p.step.name}: done in {seconds:.0f} s", flush=True)
        outputs[p.step.name] = p.out
    if install:
        for p in planned:
            if p.step.install is not None and p.out is not None:
                for written in p.step.install(p.out):
                    print(f"{p.step.name}: installed {written}", flush=True)
    return outputs
