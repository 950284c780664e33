"""The steps that rebuild every shipped model, in order: the encoder's ONNX form, the agent
replays, the past-fix histories and their searches, the dated projects where the model reads
time features, the relevance model, the decision reader (`python -m train` runs them; `train.pipeline` caches them).

The step builders take their data as arguments, so that a test can run the same steps on a
small fixture (`tests/train/test_make_train.py`); `shipped` names the real sources.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from codemem.config import SHIPPED_ENCODER
from train.decisions import DATA_FILES as DECISION_DATA
from train.encoder.pairs import ENCODER_HISTORIES
from train.licences import training_agents
from train.mirrors import MULTI_SWE_BENCH, Source, agent_run, histories
from train.pipeline import PathOf, Step
from train.provenance import REPO_ROOT

# The code every data step runs: the product's ingest, retrievers and features, and the rules.
CORE = ("codemem", "parsers", "pyproject.toml", "train/data.py", "eval/_paths.py", "train/encoder/__init__.py")
MIXED = "mixed"
# Every data step runs with a fixed hash seed: it fixes the order of sets, and with it the last
# bits of the summed scores (location masses, field matches), how their ties fall, and the
# order texts are embedded in. Two runs then write the same files (issue 53 found the past-fix,
# commit and project steps differing in those bits between two builds).
SAME_EVERY_RUN = {"PYTHONHASHSEED": "0"}
# The shipped model trains on the agents whose licence lets it (`train.licences`: mini and
# vorflux, MIT) and their mixed replay; the others' sessions (OpenHands: no licence stated) are
# scored as a check, never trained on (train/ranker/README.md).
AGENTS = ("mini", "vorflux", "openhands")
TRAINED_AGENTS = training_agents(AGENTS)
CHECK_AGENTS = tuple(a for a in AGENTS if a not in TRAINED_AGENTS)
# The encoders a build can embed with: the packaged all-MiniLM-L6-v2, or MiniLM fine-tuned on the
# written reports by the build's own `encoder-tuned` step; which one ships is decided by the rule of
# `train/encoder/README.md` ("What ships it": both builds at one commit, out of fold). Each is
# installed in the package folder of its name; the service embeds with `SHIPPED_ENCODER`'s.
ENCODERS = ("minilm", "tuned")
TUNED = "encoder-tuned"


def encoder_step(install_root: Path | None) -> Step:
    """`train.encoder.export`: all-MiniLM-L6-v2's ONNX graph, tokenizer, probe vector and card
    (seconds), installed where the service loads them (`codemem/encoders/models/minilm/`) where
    it is the encoder that ships."""
    install = None
    if install_root is not None and SHIPPED_ENCODER == "minilm":
        install = install_encoder(install_root, "minilm")
    return Step("encoder", "train.encoder.export", lambda path: ["--out", path("out")],
                code=("codemem/encoders/onnx_graph.py", "train/encoder/export.py", "train/provenance.py"),
                at_head=True, install=install)


def install_encoder(root: Path, name: str) -> Callable[[Path], list[Path]]:
    """Copies an encoder's four files into the package's `codemem/encoders/models/<name>/`."""
    def install(out: Path) -> list[Path]:
        folder = root / "codemem" / "encoders" / "models" / name
        folder.mkdir(parents=True, exist_ok=True)
        return [Path(shutil.copyfile(out / file, folder / file))
                for file in ("model.onnx", "tokenizer.json", "probe.npy", "card.json")]
    return install


def pairs_step(shared: Path) -> Step:
    """`train.encoder.pairs --encoder-only`: each change of the encoder's histories with its
    message and code window, as the git import renders them (minutes)."""
    return Step("pairs", "train.encoder.pairs",
                lambda path: ["--mirrors", path("mirrors"), "--shared", path("input:shared"), "--encoder-only",
                              "--out", f"{path('out')}/pairs.jsonl", "--work", f"{path('out')}/work"],
                code=("codemem", "train/encoder/pairs.py", "train/content_check.py", "train/data.py", "train/licences.py",
                      "train/past_fixes/build_data.py"),
                inputs={"shared": shared}, sources={r: Source(r, None, "an encoder history") for r in ENCODER_HISTORIES},
                env=SAME_EVERY_RUN)


def tuned_encoder_step(shared: Path, install_root: Path | None) -> Step:
    """`train.encoder.finetune`: MiniLM fine-tuned on the written reports and their changes, its
    graph exported and checked (about 10 min of 2 cores); installed as `models/tuned/` only by a
    build that ships it. Keyed like a data step, not by the commit: every step that embeds reads
    it, so a key that changed with each commit would rebuild all of them at every commit. Its
    card names the commit it was trained at, as the data's records do."""
    reports = REPO_ROOT / "train" / "encoder" / "reports.jsonl"
    return Step(TUNED, "train.encoder.finetune",
                lambda path: ["--pairs", f"{path('after:pairs')}/pairs.jsonl", "--reports", path("input:reports"),
                              "--shared", path("input:shared"), "--out", path("out")],
                code=("codemem/encoders/onnx_graph.py", "train/encoder/finetune.py", "train/encoder/export.py",
                      "train/encoder/pairs.py", "train/content_check.py", "train/provenance.py"),
                inputs={"reports": reports, "shared": shared}, after=("pairs",), env=SAME_EVERY_RUN,
                install=None if install_root is None else install_encoder(install_root, "tuned"))


def embedding_with(step: Step, encoder: str) -> Step:
    """`step` as it runs with `encoder`: a step that runs the product (its code holds `codemem`)
    embeds with the fine-tuned encoder of the build's `encoder-tuned` step where `encoder` is
    "tuned" (`CODEMEM_EMBEDDER` names its folder, `train.encoder.chosen_encoder`; its key then
    changes with it)."""
    if encoder == "minilm" or "codemem" not in step.code or step.name in ("pairs", TUNED):
        return step
    return replace(step, env_paths={**step.env_paths, "CODEMEM_EMBEDDER": f"after:{TUNED}"},
                   after=(*step.after, TUNED))


def replay_step(name: str, sessions: Mapping[str, Source | Path], replays: Sequence[str], tasks: Path) -> Step:
    """`train.ranker.build_data`: the tasks of `tasks` (a `swe-verified-reuse` folder) replayed
    as each agent's sessions, read from its run's mirror at its pinned commit (a `Source`) or
    from an exported folder (a `Path`, hashed by content); each replay to `OUT/<replay>/`."""
    mirrors = {agent: s for agent, s in sessions.items() if isinstance(s, Source)}
    folders = {f"sessions-{agent}": s for agent, s in sessions.items() if isinstance(s, Path)}

    def argv(path: PathOf) -> list[str]:
        agents = []
        for agent, s in sessions.items():
            where = f"{path('source:' + agent)}@{s.commit}" if isinstance(s, Source) and s.commit \
                else path(f"source:{agent}") if isinstance(s, Source) else path(f"input:sessions-{agent}")
            agents += ["--agent", f"{agent}={where}"]
        return ["--data", path("input:tasks"), *agents, "--replays", ",".join(replays), "--out", path("out")]

    return Step(name, "train.ranker.build_data", argv,
                code=(*CORE, "train/ranker/build_data.py", "train/ranker/agents.py", "train/licences.py"),
                inputs={"tasks": tasks, **folders}, sources=mirrors, env=SAME_EVERY_RUN)


def pastfix_step(shared: Path) -> Step:
    """`train.past_fixes.build_data`: bug reports over the histories' first-parent lines, each
    history's window imported into its own memory (the longest step: about 15 min of 2 cores)."""
    return Step("pastfix", "train.past_fixes.build_data",
                lambda path: ["--mirrors", path("mirrors"), "--data", path("input:tasks"), "--out", path("out")],
                code=(*CORE, "train/past_fixes"),
                inputs={"tasks": shared / "swe-verified-reuse" / "tasks.jsonl", **exclusion_inputs(shared)},
                sources={"multi-swe-bench": MULTI_SWE_BENCH, **{s.repository: s for s in histories()}},
                env={"CODEMEM_SHARED_DATA": str(shared), **SAME_EVERY_RUN})


def exclusion_inputs(shared: Path) -> dict[str, Path]:
    """The evaluation sets' task lists the past-fix builder keeps out (`train.data.evaluation_task_keys`)."""
    lite = shared / "swe-contextbench-lite"
    return {"lite-index": lite / "trajectories_index.json", "lite-related": lite / "related_tasks.jsonl",
            "past-fixes-dev": shared / "past-fixes-dev" / "tasks.json"}


def commits_step(pastfix: str = "pastfix") -> Step:
    """`train.ranker.commit_data`: every past-fix report searched over its history (~5 min)."""
    return Step("commits", "train.ranker.commit_data",
                lambda path: ["--store", f"{path('after:' + pastfix)}/store", "--tasks",
                              f"{path('after:' + pastfix)}/tasks.json", "--out", path("out")],
                code=(*CORE, "train/ranker/commit_data.py", "train/ranker/build_data.py"), after=(pastfix,),
                env=SAME_EVERY_RUN)


def history_step() -> Step:
    """`train.ranker.history_updates`: real version and setting changes of the training
    histories, as dated projects (seconds)."""
    return Step("history", "train.ranker.history_updates",
                lambda path: ["--mirrors", path("mirrors"), "--out", path("out")],
                code=("train/ranker/history_updates.py", "train/data.py"),
                sources={s.repository: s for s in histories()}, env=SAME_EVERY_RUN)


def projects_step(folders: Mapping[str, Path], after: Sequence[str] = ()) -> Step:
    """`train.ranker.project_data`: the dated projects, for a model that reads time features:
    the written ones in `folders`, and the `projects/` folder of each step in `after`."""
    return Step("projects", "train.ranker.project_data",
                lambda path: [*(a for name in folders for a in ("--projects", path(f"input:{name}"))),
                              *(a for step in after for a in ("--projects", f"{path('after:' + step)}/projects")),
                              "--out", path("out")],
                code=(*CORE, "train/ranker/project_data.py", "train/ranker/build_data.py", "train/licences.py"),
                inputs=dict(folders), after=tuple(after), env=SAME_EVERY_RUN)


@dataclass(frozen=True)
class RankerData:
    """Where the relevance model's data comes from: (step, replay) pairs trained on and scored
    as checks, the past-fix searches and the stores they searched, the dated projects."""

    signals: tuple[tuple[str, str], ...]
    checks: tuple[tuple[str, str], ...] = ()
    commits: str | None = None
    stores: str | None = None  # the step whose `store/` the commits searched
    projects: str | None = None


def ranker_step(data: RankerData, allow_dirty: bool, install_root: Path | None) -> Step:
    """`train.ranker.train`: the relevance model and its card; installed as package data with
    the card's generated section of `train/ranker/README.md`."""
    def argv(path: PathOf) -> list[str]:
        args = [a for step, replay in data.signals for a in ("--signals", f"{path('after:' + step)}/{replay}")]
        args += [a for step, replay in data.checks for a in ("--check-signals", f"{path('after:' + step)}/{replay}")]
        if data.commits:
            args += ["--commits", path(f"after:{data.commits}")]
        if data.stores:
            args += ["--stores", f"{path('after:' + data.stores)}/store"]
        if data.projects:
            args += ["--projects", path(f"after:{data.projects}"), "--questions", f"{path('after:questions')}/questions.json"]
        args += ["--out", path("out"), "--report", f"{path('out')}/cv.json", "--data-root", path("cache")]
        return args + (["--allow-dirty"] if allow_dirty else [])

    after = tuple(dict.fromkeys([s for s, _ in (*data.signals, *data.checks)]
                                + [s for s in (data.commits, data.stores, data.projects) if s]
                                + (["questions"] if data.projects else [])))
    return Step("ranker", "train.ranker.train", argv,
                code=(*CORE, "train/provenance.py", "train/ranker/train.py", "train/ranker/featureset.py",
                      "train/ranker/build_data.py", "eval/replay/fusion.py", "train/ranker/project_data.py",
                      "train/licences.py", "train/ranker/ship_rule.py", "train/ranker/absence.py",
                      "train/past_fixes/build_data.py"),
                after=after, at_head=True, install=None if install_root is None else install_ranker(install_root))


def install_ranker(root: Path) -> Callable[[Path], list[Path]]:
    """Copies the model and its card into the package and rewrites the README's generated section
    from the card (so a cached model installs the same section it was trained with)."""
    def install(out: Path) -> list[Path]:
        from train.ranker.train import markdown, write_readme

        models = root / "codemem" / "ranking" / "models"
        written = [Path(shutil.copyfile(out / name, models / name)) for name in ("ranker.txt", "ranker.json")]
        readme = root / "train" / "ranker" / "README.md"
        write_readme(readme, markdown(json.loads((models / "ranker.json").read_text())))
        return [*written, readme]
    return install


def questions_step(folders: Mapping[str, Path], shared: Path, allow_dirty: bool, install_root: Path | None) -> Step:
    """`train.questions.train`: the question reader (model and card in one file), installed
    before the ranker step, which reads it."""
    def install(out: Path) -> list[Path]:
        assert install_root is not None
        return [Path(shutil.copyfile(out / "questions.json", install_root / "codemem" / "timeline" / "models" / "questions.json"))]

    return Step("questions", "train.questions.train",
                lambda path: [*(a for name in folders for a in ("--projects", path(f"input:{name}"))),
                              "--reports", path("input:reports"), "--out", f"{path('out')}/questions.json",
                              *(["--allow-dirty"] if allow_dirty else [])],
                code=(*CORE, "train/provenance.py", "train/questions/train.py", "train/ranker/project_data.py"),
                inputs={**folders, "reports": shared / "swe-verified-reuse" / "tasks.jsonl"},
                at_head=True, install=None if install_root is None else install)


def decisions_step(sentences: Sequence[Path], allow_dirty: bool, install_root: Path | None) -> Step:
    """`train.decisions.train`: the decision reader (model and card in one file), from the
    labelled sentence files `sentences`."""
    def install(out: Path) -> list[Path]:
        assert install_root is not None
        return [Path(shutil.copyfile(out / "decisions.json", install_root / "codemem" / "timeline" / "models" / "decisions.json"))]

    names = {f"sentences-{i}": path for i, path in enumerate(sentences)}
    return Step("decisions", "train.decisions.train",
                lambda path: [*(a for name in names for a in ("--data", path(f"input:{name}"))),
                              "--out", f"{path('out')}/decisions.json", *(["--allow-dirty"] if allow_dirty else [])],
                code=(*CORE, "train/provenance.py", "train/decisions/train.py", "train/licences.py"), inputs=names,
                at_head=True, install=None if install_root is None else install)


def shipped(shared: Path, allow_dirty: bool, install_root: Path | None = REPO_ROOT,
            encoder: str = SHIPPED_ENCODER) -> list[Step]:
    """Every step that rebuilds the shipped models from public sources, in order, every model
    built on the vectors of `encoder` (one of `ENCODERS`)."""
    if encoder not in ENCODERS:
        raise ValueError(f"unknown encoder {encoder!r}: one of {ENCODERS}")
    tasks = shared / "swe-verified-reuse"
    steps = [encoder_step(install_root)]
    if encoder == "tuned":
        steps += [pairs_step(shared), tuned_encoder_step(shared, install_root)]
    steps += [replay_step(f"replay-{agent}", {agent: agent_run(agent)}, [agent], tasks)
             for agent in (*TRAINED_AGENTS, *CHECK_AGENTS)]
    steps.append(replay_step(f"replay-{MIXED}", {a: agent_run(a) for a in TRAINED_AGENTS}, [MIXED], tasks))
    steps += [pastfix_step(shared), commits_step()]
    written = {"timeline": REPO_ROOT / "eval" / "data" / "timeline", "projects": REPO_ROOT / "train" / "ranker" / "projects"}
    steps.append(questions_step(written, shared, allow_dirty, install_root))
    # Every candidate of the ship rule trains on the dated projects (the time features' data).
    steps += [history_step(), projects_step(written, after=("history",))]
    data = RankerData(signals=tuple((f"replay-{a}", a) for a in (*TRAINED_AGENTS, MIXED)),
                      checks=tuple((f"replay-{a}", a) for a in CHECK_AGENTS), commits="commits", stores="pastfix",
                      projects="projects")
    steps += [ranker_step(data, allow_dirty, install_root),
              decisions_step([REPO_ROOT / "train" / "decisions" / name for name in DECISION_DATA], allow_dirty, install_root)]
    return [embedding_with(step, encoder) for step in steps]
