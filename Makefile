# Two entry points: `make run` (all scenarios) and `make test` (every check).
# Each creates .venv from the lock file on first use and again only when the lock changes.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
UV_VERSION := 0.13.8

.PHONY: run test test-fast test-engines services lint typecheck docs unit thorough fuzz bench clean

# Every Python process of a run (pytest and its workers, the subprocesses the tests start) reads
# compiled bytecode instead of compiling its imports again: the dependencies are compiled once at
# install, and ours on first import. A machine that sets PYTHONDONTWRITEBYTECODE would otherwise
# make each of them compile everything it imports, about a second per process.
unexport PYTHONDONTWRITEBYTECODE

$(STAMP): pyproject.toml uv.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)
	UV_PROJECT_ENVIRONMENT=$(VENV) $(BIN)/uv sync --frozen --inexact --quiet --all-groups --compile-bytecode
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/harness run scenarios

lint: $(STAMP)
	$(BIN)/ruff check harness tests benchmarks examples docs/hooks
	$(BIN)/ruff format --check harness tests benchmarks examples docs/hooks

typecheck: $(STAMP)
	$(BIN)/mypy

# The documentation site, into site/: --strict turns every warning (a broken link or anchor, a page
# outside the nav) into an error; not with --quiet, which hides the warnings it counts. The
# examples on its pages run in the test suite (tests/docs/).
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# Three workers on two cores: a third of the suite waits on child processes (Node, Chromium,
# servers), and a third worker fills the time the other two would leave idle.
unit: $(STAMP)
	$(BIN)/pytest -n 3 --dist loadgroup --cov --cov-report=term

# The store tests start real PostgreSQL and Redis servers from their binaries, and the HTML
# report's browser test drives headless Chromium; install them once (Debian packages) when they
# are missing.
services:
	@MISSING=""; \
	command -v redis-server >/dev/null 2>&1 || MISSING="$$MISSING redis-server"; \
	{ command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; } || MISSING="$$MISSING postgresql"; \
	command -v chromium >/dev/null 2>&1 || MISSING="$$MISSING chromium"; \
	if [ -n "$$MISSING" ]; then \
		SUDO=""; [ "$$(id -u)" = 0 ] || SUDO="sudo"; \
		echo "installing$$MISSING (Debian packages)"; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$MISSING >/dev/null; \
	fi

# The static checks and the tests run side by side: mypy and the docs build each use one core
# for their first minute, and the tests' workers take up what they leave (the checks' few lines
# of output land among the test progress). Any of the four failing fails the target.
test: services
	$(MAKE) --no-print-directory -j4 lint typecheck docs unit

# Quick feedback while editing: the tests that need no service, subprocess or browser, with the
# `quick` hypothesis profile and no coverage. `make test` is still what CI runs.
test-fast: $(STAMP)
	HARNESS_HYPOTHESIS_PROFILE=quick $(BIN)/pytest -n 2 -q -p no:randomly -m "not server and not subprocess and not browser"

# The whole scenario library's temporal and dbos cells on Temporal and DBOS themselves (a dev
# server and DBOS on SQLite, two worker processes each), beside the same cells simulated: every
# cell must give the same verdict on both engines.
test-engines: $(STAMP)
	-$(BIN)/harness run scenarios --runtime temporal --runtime dbos --engine real --engine-workers 2 -n 2 --json .harness/engines-real.json
	-$(BIN)/harness run scenarios --runtime temporal --runtime dbos -n 2 --json .harness/engines-simulated.json
	$(BIN)/python -m harness.engines.compare .harness/engines-simulated.json .harness/engines-real.json

thorough: $(STAMP)
	HARNESS_HYPOTHESIS_PROFILE=thorough $(BIN)/pytest -n 2

# Hostile input, bounded: 5,000 inputs per property over the scenario loader, the cassette
# reader and the command line; any byte string must give a result or a typed HarnessError.
fuzz: $(STAMP)
	HARNESS_HYPOTHESIS_PROFILE=fuzz $(BIN)/pytest -n 2 -p no:cacheprovider tests/fuzz

bench: $(STAMP)
	$(BIN)/python -m benchmarks.cassette_replay
	$(BIN)/python -m benchmarks.scenario_library
	$(BIN)/python -m benchmarks.serve_load
	$(BIN)/python -m benchmarks.serve_memory
	$(BIN)/python -m benchmarks.target_overhead
	$(BIN)/python -m benchmarks.parallel_run
	$(BIN)/python -m benchmarks.startup
	$(BIN)/python -m benchmarks.summary
	$(BIN)/python -m benchmarks.persistence
	$(BIN)/python -m benchmarks.replay_memory
	$(BIN)/python -m benchmarks.fuzz_speed

clean:
	rm -rf $(VENV) site .coverage .coverage.* .pytest_cache .mypy_cache .ruff_cache
