# make run   - create .venv, install tilewise, run `tilewise explain` (the decode GEMM 64 x 24576 x 8192)
# make test  - create .venv, install tilewise with its kernel, web, plot, test and docs extras;
#              run ruff, mypy, the strict docs build and pytest
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip -q --disable-pip-version-check
# The CPU build of PyTorch that this machine keeps on disk; a plain `torch` would pull a CUDA build.
TORCH  ?= torch==2.13.0
JOBS   ?= 2

.PHONY: run test lint format typecheck docs gpu-test clean

$(VENV)/.core: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -U pip
	$(PIP) install -e .
	touch $@

$(VENV)/.test: pyproject.toml $(VENV)/.core
	$(PIP) install "$(TORCH)"
	$(PIP) install -e ".[kernels,web,plot,test,docs]"
	@command -v chromium >/dev/null 2>&1 || ( \
	  echo "installing Debian's chromium for the browser tests"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	  || echo "warning: could not install chromium; browser tests will be skipped" )
	touch $@

run: $(VENV)/.core
	$(VENV)/bin/tilewise explain

lint: $(VENV)/.test
	$(VENV)/bin/ruff check src tests examples benchmarks scripts
	$(VENV)/bin/ruff format --check src tests examples benchmarks scripts

format: $(VENV)/.test
	$(VENV)/bin/ruff format src tests examples benchmarks scripts
	$(VENV)/bin/ruff check --fix src tests examples benchmarks scripts

typecheck: $(VENV)/.test
	$(VENV)/bin/mypy

# The documentation site (mkdocs, material theme) from docs/ into site/; --strict turns a broken link into a failure.
docs: $(VENV)/.test
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

test: lint typecheck docs
	TRITON_INTERPRET=1 $(PY) -m pytest -n $(JOBS) --timeout=1200 -q

# On the device machine: the kernel checks at full size (no interpreter).
gpu-test:
	$(PY) -m pytest -q -m gpu tests

clean:
	rm -rf $(VENV) build dist site src/*.egg-info .pytest_cache .ruff_cache .mypy_cache
