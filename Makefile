# The two README commands: `make demo` and `make test`. Both set up on demand.
PY      := .venv/bin/python
RATIO   := .venv/bin/ratio
CONFIG  ?= configs/neurips.toml
STAMP   := .venv/.ratio-setup

.PHONY: setup demo test lint bench clean-runs

setup: $(STAMP)

$(STAMP): pyproject.toml scripts/fetch_models.py scripts/fetch_llm.py
	test -x $(PY) || python3 -m venv .venv
	$(PY) -m pip install -q --upgrade pip
	# torch first: the CPU build on local disk; any other spec pulls a CUDA build
	$(PY) -m pip install -q torch==2.13.0
	# llama-cpp-python compiles llama.cpp from source (~12 min on 2 cores)
	CMAKE_BUILD_PARALLEL_LEVEL=2 $(PY) -m pip install -q -e ".[all]"
	$(PY) scripts/fetch_models.py
	$(PY) scripts/fetch_llm.py
	touch $(STAMP)

demo: setup
	$(RATIO) build --config $(CONFIG)
	$(RATIO) evaluate --config $(CONFIG)

test: setup
	$(PY) -m pytest -p no:cacheprovider

lint: setup
	.venv/bin/ruff check src tests benchmarks scripts
	.venv/bin/ruff format --check src tests benchmarks scripts

bench: setup
	$(PY) benchmarks/ingest.py
	$(PY) benchmarks/mine.py
	$(PY) benchmarks/retrieval.py
