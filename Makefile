# The README commands: `make demo`, `make test`, `make conformance`. Everything installs from this
# repository's own files into .venv/, with the exact versions of constraints.txt. torch (the
# reference embedding backend) is not part of it: from PyPI it is the CUDA build on Linux (a 526 MB
# wheel plus 19 nvidia/cuda packages); `make install-torch` adds the CPU build from PyTorch's index.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install install-torch demo lint test test-slow conformance bench clean

install: $(STAMP)

# A PYTHON given (`make demo PYTHON=python3.12`) that is not the Python the existing .venv was made
# with is refused, every time, installed or not: that .venv was used as it was, on the other
# version, without a word. The .venv is not remade behind the user's back: make clean first.
.PHONY: venv-python
# (A PYTHON exported in the environment, as node-gyp users have it, is not dropped by leaving it off the line.)
WITHOUT_PYTHON = $(if $(filter environment,$(origin PYTHON)),env -u PYTHON make,make without PYTHON=)
venv-python:
ifneq ($(filter command line environment,$(origin PYTHON)),)
	@if [ -x $(PY) ] && ! $(PYTHON) -V >/dev/null 2>&1; then \
		echo "make: $(PYTHON) is $(PYTHON_IS); $(VENV) was made with $$($(PY) -V 2>&1) ($(WITHOUT_PYTHON) uses it)" >&2; exit 1; \
	elif [ -x $(PY) ] && [ "$$($(PY) -V 2>&1 | cut -d. -f1,2)" != "$$($(PYTHON) -V 2>&1 | cut -d. -f1,2)" ]; then \
		echo "make: $(VENV) was made with $$($(PY) -V 2>&1), not with PYTHON=$(PYTHON) ($(PYTHON_IS)): make clean (or rm -rf $(VENV)), then make PYTHON=$(PYTHON) again" >&2; exit 1; fi
endif

# [all] is every command and backend but the torch one (tests/test_install.py resolves this line
# against PyPI and checks that no torch and no CUDA package comes with it).
# Python 3.11 to 3.14, checked before the venv is made: with an older python3 the venv was made
# anyway, pip failed deep inside ("requires a different Python"), and every later
# `make PYTHON=python3.11` reused that venv and failed the same way. With 3.15, pip finds no
# onnxruntime ("conflicting dependencies") and numpy only as source: those pins of constraints.txt
# have no wheel for it yet (checked 2026-12-06; raise the bound with them).
NEED_PYTHON := import sys; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 14))
SUPPORTED := Python 3.11 to 3.14 (constraints.txt's numpy and onnxruntime have no wheel for a later one yet)
# What $(PYTHON) is, in a few words: its version, or that it is not found, or that it does not run (a
# pyenv shim of a version that is not active: its own error text made the refusal unreadable).
PYTHON_IS = $$(if ! command -v $(PYTHON) >/dev/null 2>&1; then echo 'not found'; \
	elif v=$$($(PYTHON) -V 2>&1); then echo "$$v"; \
	else echo "$$(command -v $(PYTHON)), which does not run ($(PYTHON) -V failed)"; fi)
$(STAMP): pyproject.toml constraints.txt | venv-python
	@if [ -x $(PY) ] && ! $(PY) -c '$(NEED_PYTHON)'; then \
		echo "make: $(VENV) was made with $$($(PY) -V 2>&1); this project needs $(SUPPORTED): make clean, then make PYTHON=python3.13 (or another of those)" >&2; exit 1; fi
	@if [ ! -x $(PY) ] && ! $(PYTHON) -c '$(NEED_PYTHON)' 2>/dev/null; then \
		echo "make: $(PYTHON) is $(PYTHON_IS); this project needs $(SUPPORTED): make PYTHON=python3.13 (or another of those)" >&2; exit 1; fi
	@# A venv without pip (Debian and Ubuntu make one and fail when python3-venv is not installed) is made
	@# again; one that cannot be made is removed: it was kept, and every later make failed in pip ("No module named pip").
	@$(PY) -m pip --version >/dev/null 2>&1 || $(PYTHON) -m venv $(VENV) || \
		{ rm -rf $(VENV); echo "make: $(PYTHON) -m venv failed (the reason is above); $(VENV) removed" >&2; exit 1; }
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[all,test]'
	@# Bytecode up front: with PYTHONDONTWRITEBYTECODE set, every command would recompile the package.
	$(PY) -m compileall -q openclaw_memory
	@touch $(STAMP)

# The torch extra with torch's CPU build: the version constraints.txt pins, its "+cpu" wheel from
# PyTorch's index (named exactly, so PyPI's CUDA build of the same version cannot be picked), and
# everything else from PyPI. The slow tier's reference-backend tests skip without it; CI runs it.
# One retry: a machine that cannot reach that index (a local wheel folder serves it) waited out
# five backoffs for each of ~80 packages.
TORCH_INDEX := https://download.pytorch.org/whl/cpu
TORCH_CPU := torch==$(shell sed -n 's/^torch==//p' constraints.txt)+cpu
TORCH_STAMP := $(VENV)/.installed-torch

install-torch: $(TORCH_STAMP)

$(TORCH_STAMP): $(STAMP)
	$(PY) -m pip install --quiet --retries 1 -c constraints.txt --extra-index-url $(TORCH_INDEX) '$(TORCH_CPU)' -e '.[torch]'
	@touch $(TORCH_STAMP)

demo: install
	@bash scripts/demo.sh

# The fast tier, in parallel (the hash embedder, the CLI in process): what to run before every commit.
# TEST_WORKERS: pytest-xdist workers, one per core by default (4 on 2 cores measured no faster).
TEST_WORKERS ?= auto
PYTEST_FLAGS ?= --durations=15
test: install lint
	$(PY) -m pytest --ignore=tests/conformance -m "not slow" -n $(TEST_WORKERS) $(PYTEST_FLAGS)

# The linter and the type checker, configured in pyproject.toml; part of `make test`.
lint: install
	$(VENV)/bin/ruff check openclaw_memory tests bench scripts
	$(VENV)/bin/mypy

# The slow tier: the real model, large trees, many real processes (CI runs it after `make test`).
test-slow: install
	$(PY) -m pytest --ignore=tests/conformance -m slow -n $(TEST_WORKERS) $(PYTEST_FLAGS)

# The differential suite against the real OpenClaw 2026.9.6 (from the npm registry, into build/oracle).
# Its installer and driver live in the shared folder beside the repository (SHARED): a checkout
# without it skips the suite, says so, and succeeds; an installer that fails (no npm registry) fails.
SHARED ?= ../shared
ORACLE := build/oracle
conformance: install
	@if [ ! -f $(SHARED)/oracle/setup.sh ]; then \
		echo "conformance: skipped, all of tests/conformance: no OpenClaw oracle installer at $(SHARED)/oracle/setup.sh (see docs/openclaw.md)"; \
	else \
		set -e; \
		$(SHARED)/oracle/setup.sh $(ORACLE) >/dev/null; \
		OPENCLAW_SHARED=$(SHARED) $(PY) -m pytest tests/conformance $(PYTEST_FLAGS); \
	fi

bench: install
	$(PY) bench/scan.py

clean:
	rm -rf $(VENV) build .pytest_cache .hypothesis .mypy_cache .ruff_cache
