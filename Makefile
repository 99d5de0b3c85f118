# The two README commands: `make demo` and `make test`. Everything installs from this
# repository's own files into .venv/ (torch pinned to the CPU build by constraints.txt).

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install demo lint test test-slow conformance bench clean

install: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[all,test]'
	@# Bytecode up front: with PYTHONDONTWRITEBYTECODE set, every command would recompile the package.
	$(PY) -m compileall -q openclaw_memory
	@touch $(STAMP)

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
ORACLE := build/oracle
conformance: install
	../shared/oracle/setup.sh $(ORACLE) >/dev/null
	$(PY) -m pytest tests/conformance $(PYTEST_FLAGS)

bench: install
	$(PY) bench/scan.py

clean:
	rm -rf $(VENV) build .pytest_cache .hypothesis .mypy_cache .ruff_cache
