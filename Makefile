# make run   - create .venv, install tilewise, run `tilewise explain` (the decode GEMM 64 x 24576 x 8192)
# make test  - create .venv, install tilewise with its kernel, web, plot, test and docs extras and find a
#              Chromium (user space, no root needed); run ruff, mypy, the strict docs build and pytest
# make lint  - ruff (lint + format check) and mypy only (the `lint` extra; the same hooks as pre-commit)
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip -q --disable-pip-version-check
# The CPU build of PyTorch that this machine keeps on disk; a plain `torch` would pull a CUDA build.
TORCH  ?= torch==2.13.0
# Empty: the newest triton the `kernels` extra allows (what CI runs). TRITON=triton==3.6.0 runs the CPU tests on
# the version every committed GPU figure was measured with (docs/install.md).
TRITON ?=
JOBS   ?= 2

.PHONY: run test lint format typecheck docs browser gpu-test clean

$(VENV)/.core: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -U pip
	$(PIP) install -e .
	touch $@

$(VENV)/.lint: pyproject.toml $(VENV)/.core
	$(PIP) install -e ".[lint]"
	touch $@

$(VENV)/.test: pyproject.toml $(VENV)/.core
	$(PIP) install "$(TORCH)" $(TRITON)
	$(PIP) install -e ".[kernels,web,plot,test,docs]" $(TRITON)
	touch $@

# The browser tests' Chromium: found on the system, or Debian's package unpacked into .venv/chromium without
# root (scripts/find_browser.sh says which, or why there is none; the browser tests then skip with that line).
$(VENV)/.browser: scripts/find_browser.sh $(VENV)/.core
	bash scripts/find_browser.sh $(VENV)/chromium > $@

browser: $(VENV)/.browser
	@echo "chromium: $$(cat $(VENV)/.browser)"

run: $(VENV)/.core
	$(VENV)/bin/tilewise explain

lint: $(VENV)/.lint
	$(VENV)/bin/ruff check src tests examples benchmarks scripts
	$(VENV)/bin/ruff format --check src tests examples benchmarks scripts
	$(VENV)/bin/mypy

format: $(VENV)/.test
	$(VENV)/bin/ruff format src tests examples benchmarks scripts
	$(VENV)/bin/ruff check --fix src tests examples benchmarks scripts

typecheck: $(VENV)/.lint
	$(VENV)/bin/mypy

# The documentation site (mkdocs, material theme) from docs/ into site/; --strict turns a broken link into a failure.
docs: $(VENV)/.test
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

test: lint docs $(VENV)/.test $(VENV)/.browser
	TILEWISE_CHROMIUM="$$(cat $(VENV)/.browser)" TRITON_INTERPRET=1 $(PY) -m pytest -n $(JOBS) --timeout=1200 -q

# On the device machine: the kernel checks at full size (no interpreter).
gpu-test:
	$(PY) -m pytest -q -m gpu tests

clean:
	rm -rf $(VENV) build dist site src/*.egg-info .pytest_cache .ruff_cache .mypy_cache
