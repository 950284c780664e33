# The two commands a newcomer needs: `make serve` and `make test`; CI runs `make lint test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: setup dev serve lint test clean

# codemem and what serving needs (`make serve`, and the `codemem` command for MCP and the hook).
setup: $(STAMP)

# The test and eval extras on top (pytest, ruff, mypy, moto, schemathesis, bm25s, matplotlib),
# for `make lint` and `make test` only.
dev: $(DEV_STAMP)

# torch==2.13.0 is pinned in pyproject.toml and resolved in the same pip call as
# sentence-transformers, so pip takes the CPU build rather than a multi-GB CUDA one.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $(STAMP)

$(DEV_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[test,eval]"
	touch $(DEV_STAMP)

serve: setup
	$(BIN)/codemem serve

# ruff and mypy come from the `test` extra; their settings are in pyproject.toml.
lint: dev
	$(BIN)/ruff check .
	$(BIN)/mypy

test: dev
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV)
