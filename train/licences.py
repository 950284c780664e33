"""Every training source's licence, in one table, and what it lets a training run do.

A model trained here ships as package data under this project's licence (Apache-2.0). Two uses
of a source are told apart, because they differ in what reaches the package:

- `trains`: a model may be fitted on what is derived from the source (features, labels, vectors
  of its text). The relevance model and the question reader ship numbers, never the source's
  text. A source whose licence is unknown or not stated is never trained on: its data may be
  scored as a check (`check_only`), and a check cannot be mixed into a training replay.
- `text`: the source's own words may be committed to this repository or ship inside a model
  (the decision reader's training sentences are committed, and its character n-grams ship in
  its file). Copyleft text (GPL) is kept out, so that nothing of it is redistributed under
  Apache-2.0; permissive text keeps its notice (`notice`, a file under `train/licences/`).

The trainers refuse, whatever their command line says: `train.ranker.build_data` a mixed
replay with a check-only agent; `train.ranker.train` training queries from a source that may
not train; `train.decisions.train` sentences from a source whose text may not ship. A source
missing from the table is refused too: adding one means writing its licence here first.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Licence:
    spdx: str  # SPDX expression, or "NONE" where the source states none
    where: str  # where the licence was read
    trains: bool  # a model may be fitted on data derived from it
    text: bool  # its words may be committed here or ship inside a model
    notice: str = ""  # the notice file kept beside text taken from it (train/licences/...)

    @property
    def check_only(self) -> bool:
        return not self.trains


def _permissive(spdx: str, where: str, notice: str = "") -> Licence:
    return Licence(spdx, where, trains=True, text=True, notice=notice)


# Keyed by what the training data names a source by: an agent run's name (`train.ranker.agents.RUNS`),
# a repository "owner/name" (the histories and the datasets' repositories), or a dataset's name.
LICENCES: dict[str, Licence] = {
    # agent runs (their trajectories are replayed into memories)
    "mini": _permissive("MIT", "gruckion/mini-swe-agent LICENSE.md"),
    "vorflux": _permissive("MIT", "piyushhhxyz/vorflux-swe-benchmarks LICENSE"),
    "openhands": Licence("NONE", "gsmoon97/swe-agent-eval and its source multi-swe-bench/experiments state none",
                         trains=False, text=False),
    # datasets
    "swe-verified-reuse": _permissive("MIT", "SWE-bench Verified (princeton-nlp/SWE-bench, MIT); shared/data"),
    "multi-swe-bench": _permissive("CC0-1.0", "Multi-SWE-bench's dataset card; copy kuppireddypravalika/MSWE-validation-dataset"),
    # the past-fix histories (train.past_fixes.build_data.HISTORIES), read at their HEAD
    "facebook/zstd": _permissive("BSD-3-Clause OR GPL-2.0-only", "LICENSE (BSD) and COPYING (GPL-2.0); taken as BSD"),
    "grpc/grpc-go": _permissive("Apache-2.0", "LICENSE"),
    "zeromicro/go-zero": _permissive("MIT", "LICENSE"),
    "tokio-rs/tracing": _permissive("MIT", "LICENSE"),
    "sharkdp/fd": _permissive("MIT OR Apache-2.0", "LICENSE-MIT, LICENSE-APACHE"),
    "tokio-rs/bytes": _permissive("MIT", "LICENSE"),
    "anuraghazra/github-readme-stats": _permissive("MIT", "LICENSE"),
    "fmtlib/fmt": _permissive("MIT", "LICENSE"),
    "nlohmann/json": _permissive("MIT", "LICENSE.MIT"),
    "simdjson/simdjson": _permissive("Apache-2.0 OR MIT", "LICENSE, LICENSE-MIT"),
    "catchorg/Catch2": _permissive("BSL-1.0", "LICENSE.txt", notice="Catch2-BSL-1.0.txt"),
    "sphinx-doc/sphinx": _permissive("BSD-2-Clause", "LICENSE.rst"),
    "pytest-dev/pytest": _permissive("MIT", "LICENSE"),
    "pydata/xarray": _permissive("Apache-2.0", "LICENSE"),
    # GPL-2.0: its history trains the relevance model (numbers over its changes ship, no text),
    # but its commit subjects are not committed here nor learned by the decision reader.
    "pylint-dev/pylint": Licence("GPL-2.0-or-later", "LICENSE", trains=True, text=False),
    "astropy/astropy": _permissive("BSD-3-Clause", "LICENSE.rst"),
    "sympy/sympy": _permissive("BSD-3-Clause", "LICENSE"),
    # the encoder's histories (train.encoder.pairs.HISTORIES), read at their HEAD
    "pallets/click": _permissive("BSD-3-Clause", "LICENSE.txt"),
    "encode/httpx": _permissive("BSD-3-Clause", "LICENSE.md"),
    "python-attrs/attrs": _permissive("MIT", "LICENSE"),
    "Textualize/rich": _permissive("MIT", "LICENSE"),
    "psf/black": _permissive("MIT", "LICENSE"),
    "spf13/cobra": _permissive("Apache-2.0", "LICENSE.txt"),
    "go-chi/chi": _permissive("MIT", "LICENSE"),
    "sirupsen/logrus": _permissive("MIT", "LICENSE"),
    "stretchr/testify": _permissive("MIT", "LICENSE"),
    "urfave/cli": _permissive("MIT", "LICENSE"),
    "serde-rs/serde": _permissive("MIT OR Apache-2.0", "LICENSE-MIT, LICENSE-APACHE"),
    "rayon-rs/rayon": _permissive("MIT OR Apache-2.0", "LICENSE-MIT, LICENSE-APACHE"),
    "hyperium/hyper": _permissive("MIT", "LICENSE"),
    "expressjs/express": _permissive("MIT", "LICENSE"),
    "chalk/chalk": _permissive("MIT", "license"),
    "date-fns/date-fns": _permissive("MIT", "LICENSE.md"),
    "google/gson": _permissive("Apache-2.0", "LICENSE"),
    "square/okhttp": _permissive("Apache-2.0", "LICENSE.txt"),
    "FasterXML/jackson-databind": _permissive("Apache-2.0", "LICENSE"),
    "libuv/libuv": _permissive("MIT", "LICENSE (code; LICENSE-docs: CC-BY-4.0 for its docs)"),
    "gabime/spdlog": _permissive("MIT", "LICENSE"),
    "google/googletest": _permissive("BSD-3-Clause", "LICENSE"),
    "rack/rack": _permissive("MIT", "MIT-LICENSE"),
    "sinatra/sinatra": _permissive("MIT", "LICENSE"),
    # text written for this project (train/ranker/projects, eval/data/timeline, train/decisions)
    "codemem": _permissive("Apache-2.0", "this repository"),
}


class Refused(SystemExit):
    """A source the licence table does not let this use of it through."""


def licence_of(source: str) -> Licence:
    """The table's entry for `source`; refused (SystemExit) where it has none."""
    try:
        return LICENCES[source]
    except KeyError:
        raise Refused(f"refusing {source!r}: it is not in the licence table (train/licences.py); "
                      "write its licence there before training on it") from None


def require_training(source: str, why: str = "") -> Licence:
    """`source`'s licence where it lets a model be trained on it; refused otherwise."""
    entry = licence_of(source)
    if not entry.trains:
        raise Refused(f"refusing {source!r}{' (' + why + ')' if why else ''}: its licence ({entry.spdx}, "
                      f"{entry.where}) does not let a model be trained on it; it may be scored as a check only")
    return entry


def require_text(source: str, why: str = "") -> Licence:
    """`source`'s licence where its words may be committed here and ship in a model; refused otherwise."""
    entry = licence_of(source)
    if not entry.text:
        raise Refused(f"refusing {source!r}{' (' + why + ')' if why else ''}: its licence ({entry.spdx}) does "
                      "not let its text be committed to this Apache-2.0 repository or ship inside a model")
    return entry


def training_agents(names: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Those of the agent runs `names` a model may be trained on, in order."""
    return tuple(n for n in names if licence_of(n).trains)
