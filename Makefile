# Two commands matter: `make dev` runs the service locally, `make test` runs every test.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install dev test lint typecheck bench clean

$(STAMP): requirements-dev.txt layers/core/requirements.txt pyproject.toml
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is required"'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $(STAMP)

install: $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check layers local tests bench
	$(BIN)/ruff format --check layers local tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

test: lint typecheck
	$(BIN)/pytest

# Benchmark against a 1,000,000-record corpus (see docs/performance.md).
bench: $(STAMP)
	$(BIN)/python -m bench.store_bench $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .tmp .pytest_cache .mypy_cache .ruff_cache

# Run the service locally: PostgreSQL, AWS emulation, API Gateway on 127.0.0.1:8787.
dev: $(STAMP)
	$(BIN)/python -m memory_local.dev
