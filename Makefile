# Two entry points: `make run` (all scenarios) and `make test` (every check).
# Each creates .venv from the lock file on first use and again only when the lock changes.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
UV_VERSION := 0.13.8

.PHONY: run test lint typecheck unit thorough bench clean

$(STAMP): pyproject.toml uv.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)
	UV_PROJECT_ENVIRONMENT=$(VENV) $(BIN)/uv sync --frozen --inexact --quiet --all-groups
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/harness run scenarios

lint: $(STAMP)
	$(BIN)/ruff check harness tests benchmarks
	$(BIN)/ruff format --check harness tests benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest -n 2 --cov --cov-report=term

test: lint typecheck unit

thorough: $(STAMP)
	HARNESS_HYPOTHESIS_PROFILE=thorough $(BIN)/pytest -n 2

bench: $(STAMP)
	$(BIN)/python -m benchmarks.cassette_replay

clean:
	rm -rf $(VENV) .coverage .coverage.* .pytest_cache .mypy_cache .ruff_cache
