# The two README commands: `make demo` and `make test`. Both set up on demand.
PY      := .venv/bin/python
RATIO   := .venv/bin/ratio
CONFIG  ?= configs/neurips.toml
STAMP   := .venv/.ratio-setup
# x86-64 with AVX2/FMA/F16C (every machine since 2013); no AVX-512, no AMX, no -march=native.
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
	-DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF \
	-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF

.PHONY: setup demo train test lint bench clean-runs

setup: $(STAMP)

$(STAMP): pyproject.toml scripts/fetch_models.py scripts/fetch_llm.py
	test -x $(PY) || python3 -m venv .venv
	$(PY) -m pip install -q --upgrade pip
	# torch first: the CPU build on local disk; any other spec pulls a CUDA build
	$(PY) -m pip install -q torch==2.13.0
	# llama-cpp-python compiles llama.cpp from source (~12 min on 2 cores). Portable, not native:
	# a -march=native build segfaults on CPUs with AVX-512/AMX (docs/judging.md, "The build").
	# --no-cache-dir so a wheel built elsewhere with other flags is never reused.
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=2 \
		$(PY) -m pip install -q --no-cache-dir "llama-cpp-python[server]>=0.3.36"
	$(PY) -m pip install -q -e ".[all]"
	$(PY) scripts/fetch_models.py
	$(PY) scripts/fetch_llm.py
	touch $(STAMP)

# Build the benchmark, table BM25, the static model, the untuned base and the shipped move
# model (the dense rows on the config's seeded sub-pool), then index what `ratio serve` serves
# (the same sub-pool: its vectors are the evaluation's), so the service starts in seconds.
demo: setup
	$(RATIO) build --config $(CONFIG)
	$(RATIO) evaluate --config $(CONFIG)
	$(RATIO) serve --config $(CONFIG) --index-only

# Move-specific retrievers on the full training split, then the full-pool comparison
# (docs/results.md). `ratio serve` then answers each move with its winner on validation.
# Then the unified model is exported as the shipped model folder (models/, committed) and its
# card gets the full-pool test table of the shipped weights against BM25 and the untuned base.
SHIPPED ?= models/ratio-moves-minilm-v1
SHIPPED_TEST ?= runs/shipped-test
train: setup
	$(RATIO) build --config $(CONFIG)
	$(RATIO) train --config $(CONFIG) --relation all
	$(RATIO) train --config $(CONFIG) --relation all --unified
	$(RATIO) train-compare --config $(CONFIG)
	$(RATIO) model export $(CONFIG) --out $(SHIPPED)
	$(RATIO) train-compare --config $(CONFIG) --system bm25 --system baseline --system shipped \
		--shipped $(SHIPPED) --max-queries 0 --max-pool 0 --out $(SHIPPED_TEST)/full
	$(RATIO) model card $(SHIPPED) --test $(SHIPPED_TEST)/full

test: setup
	$(PY) -m pytest -p no:cacheprovider

lint: setup
	.venv/bin/ruff check src tests benchmarks scripts
	.venv/bin/ruff format --check src tests benchmarks scripts
	.venv/bin/mypy  # src/, as [tool.mypy] in pyproject.toml says

bench: setup
	$(PY) benchmarks/ingest.py
	$(PY) benchmarks/mine.py
	$(PY) benchmarks/retrieval.py
