# The two commands: `make run` starts a control plane, `make test` runs every check.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP_RUN := $(VENV)/.installed-run
STAMP_DEV := $(VENV)/.installed-dev
ARGS ?=

.PHONY: run test lint typecheck layers unit e2e bench models clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# An editable install is not byte-compiled, and PYTHONDONTWRITEBYTECODE (set on some images) would
# keep Python from caching it: compile once here so every start skips it.
$(STAMP_RUN): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	$(BIN)/python -m compileall -q src
	touch $@

$(STAMP_DEV): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev]'
	$(BIN)/python -m compileall -q src
	touch $@ $(STAMP_RUN)

run: $(STAMP_RUN)
	$(BIN)/kplane serve $(ARGS)

lint: $(STAMP_DEV)
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples

typecheck: $(STAMP_DEV)
	$(BIN)/mypy
	$(BIN)/mypy --strict examples

layers: $(STAMP_DEV)
	$(BIN)/lint-imports

unit: $(STAMP_DEV)
	$(BIN)/pytest -q tests

test: lint typecheck layers unit

bench: $(STAMP_RUN)
	$(BIN)/python benchmarks/run_all.py

models: $(STAMP_DEV)
	$(BIN)/python -m kplane.client._modelgen && $(BIN)/ruff format -q src/kplane/client/models && $(BIN)/ruff check --fix -q src/kplane/client/models

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
