# The two commands a newcomer needs: `make serve` and `make test`; CI runs `make lint test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup serve lint test clean

setup: $(STAMP)

# torch==2.13.0 is pinned in pyproject.toml and resolved in the same pip call as
# sentence-transformers, so pip takes the CPU build rather than a multi-GB CUDA one.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test,eval]"
	touch $(STAMP)

serve: setup
	$(BIN)/codemem serve

# ruff and mypy come from the `test` extra; their settings are in pyproject.toml.
lint: setup
	$(BIN)/ruff check .
	$(BIN)/mypy

test: setup
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV)
