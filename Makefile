# cogito-lc developer commands. Every target sets up what it needs on a fresh machine
# with only python3: a virtual environment, the package and its test/bench extras,
# the CPU build of torch and llama-cpp-python (built from source once; pip caches the wheel).

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
TORCH_SPEC ?= torch==2.13.0
LLAMA_SPEC ?= llama-cpp-python[server]==0.3.36
# A portable CPU build: a native build may enable instructions (AMX) a VM does not allow.
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
LOCAL_WHEELS := $(wildcard /opt/wheels)
FIND_LINKS := $(if $(LOCAL_WHEELS),--find-links $(LOCAL_WHEELS),)
STAMP := $(VENV)/.cogito-installed
LLM_STAMP := $(VENV)/.cogito-llm-installed
LOCOMO ?= ../shared/data/locomo/locomo10-dev.json
PYTEST_ARGS ?=
# The oldest Python the package claims (requires-python); the unit tier also runs on it.
PYTHON_OLDEST ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.10.*/bin/python3.10) $(shell command -v python3.10))
VENV_OLDEST ?= .venv310
PY_OLDEST := $(VENV_OLDEST)/bin/python
STAMP_OLDEST := $(VENV_OLDEST)/.cogito-installed
# The newest Python the package claims; the unit tier runs on it too.
PYTHON_NEWEST ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12.*/bin/python3.12) $(shell command -v python3.12))
VENV_NEWEST ?= .venv312
PY_NEWEST := $(VENV_NEWEST)/bin/python
STAMP_NEWEST := $(VENV_NEWEST)/.cogito-installed

export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
export ANONYMIZED_TELEMETRY := False

.PHONY: help setup setup-llm setup-browser test test-unit test-unit-oldest test-unit-newest test-integration lint format demo demo-postgres bench dist clean

help:
	@echo "make demo   - set up and run the demo on the embedded defaults"
	@echo "make demo-postgres - the demo on a private Postgres with pgvector (pgserver)"
	@echo "make test   - set up and run the whole test suite (unit + integration)"
	@echo "make test-unit-oldest - the unit tier on Python 3.10 (.venv310, no torch)"
	@echo "make test-unit-newest - the unit tier on Python 3.12 (.venv312, no torch)"
	@echo "make dist   - build the wheel and sdist into dist/ and check them with twine"
	@echo "make lint   - ruff, mypy (strict) and the import-linter layer contracts"
	@echo "make bench  - LoCoMo retrieval benchmark (LOCOMO=path)"

setup: $(STAMP)

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet $(FIND_LINKS) "$(TORCH_SPEC)"
	$(PIP) install --quiet $(FIND_LINKS) -e ".[all,dev]"
	touch $(STAMP)

# The local model server of the integration tier (the demo does not need it).
setup-llm: $(LLM_STAMP)

$(LLM_STAMP): $(STAMP)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PIP) install --quiet $(FIND_LINKS) "$(LLAMA_SPEC)"
	touch $(LLM_STAMP)

# The browser of the inspector's tests: Debian's chromium, driven by Playwright
# (executable_path); Playwright's own browser download is never used.
setup-browser:
	command -v chromium >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends chromium) || \
		echo "WARNING: chromium could not be installed; the inspector's browser tests will skip"

# The unit tiers on the oldest and the newest Python run side by side, one per core, once
# their environments are set up (one at a time: pip's cache is shared); then the whole suite.
UNIT_VENVS := $(if $(PYTHON_OLDEST),$(STAMP_OLDEST)) $(if $(PYTHON_NEWEST),$(STAMP_NEWEST))

test: setup setup-llm setup-browser $(UNIT_VENVS)
	$(MAKE) --no-print-directory -j2 --output-sync=target test-unit-oldest test-unit-newest
	$(PY) -m pytest tests $(PYTEST_ARGS)

test-unit: setup
	$(PY) -m pytest tests/unit_tests $(PYTEST_ARGS)

# The unit tier on the oldest supported Python, without the torch-based `local` extra
# (on 3.10 it pulls a multi-gigabyte CUDA build); tests that need torch skip themselves.
ifeq ($(PYTHON_OLDEST),)
test-unit-oldest:
	@echo "SKIP test-unit-oldest: no python3.10 found (set PYTHON_OLDEST=/path/to/python3.10)"
else
test-unit-oldest: $(STAMP_OLDEST)
	$(PY_OLDEST) -m pytest tests/unit_tests $(PYTEST_ARGS)

$(STAMP_OLDEST): pyproject.toml Makefile
	test -x $(PY_OLDEST) || $(PYTHON_OLDEST) -m venv $(VENV_OLDEST)
	$(PY_OLDEST) -m pip install --quiet --upgrade pip
	$(PY_OLDEST) -m pip install --quiet $(FIND_LINKS) -e ".[openai,ollama,anthropic,server,cli,dev,bench,postgres,qdrant,langgraph,mcp]"
	touch $(STAMP_OLDEST)
endif

# The unit tier on the newest supported Python, without torch as on the oldest.
ifeq ($(PYTHON_NEWEST),)
test-unit-newest:
	@echo "SKIP test-unit-newest: no python3.12 found (set PYTHON_NEWEST=/path/to/python3.12)"
else
test-unit-newest: $(STAMP_NEWEST)
	$(PY_NEWEST) -m pytest tests/unit_tests $(PYTEST_ARGS)

$(STAMP_NEWEST): pyproject.toml Makefile
	test -x $(PY_NEWEST) || $(PYTHON_NEWEST) -m venv $(VENV_NEWEST)
	$(PY_NEWEST) -m pip install --quiet --upgrade pip
	$(PY_NEWEST) -m pip install --quiet $(FIND_LINKS) -e ".[openai,ollama,anthropic,server,cli,dev,bench,postgres,qdrant,langgraph,mcp]"
	touch $(STAMP_NEWEST)
endif

test-integration: setup setup-llm setup-browser
	$(PY) -m pytest tests/integration_tests $(PYTEST_ARGS)

lint: setup
	$(PY) -m ruff check cogito_lc tests benchmarks examples
	$(PY) -m ruff format --check cogito_lc tests benchmarks examples
	$(PY) -m mypy
	$(VENV)/bin/lint-imports

format: setup
	$(PY) -m ruff format cogito_lc tests benchmarks examples
	$(PY) -m ruff check --fix cogito_lc tests benchmarks examples

demo: setup
	$(PY) examples/demo.py

# The demo on a private Postgres 16 with pgvector (pgserver, from PyPI; no root, no install).
demo-postgres: setup
	$(PIP) install --quiet $(FIND_LINKS) -e ".[postgres]" "pgserver>=0.1.4"
	$(PY) examples/demo.py --postgres

bench: setup setup-llm
	$(PY) benchmarks/locomo.py $(LOCOMO)

# The artefacts users install: what the packaging tests build and install too.
dist: setup
	rm -rf dist
	$(PY) -m build --outdir dist .
	$(PY) -m twine check --strict dist/*

clean:
	rm -rf $(VENV) $(VENV_OLDEST) $(VENV_NEWEST) .pytest_cache .mypy_cache .ruff_cache dist build
