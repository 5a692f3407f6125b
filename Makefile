# The two front-door commands: `make run` and `make test`.
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
TEST_PROCESSES ?= 2
# Tests that touch no database (pure maths, the GPU-host agent): the SQLite pass skips them,
# since running them twice proves nothing (they run in the first pass).
NO_DATABASE_TESTS := --ignore=tests/analysis --ignore=tests/collectors/agent
# Tests run on PostgreSQL when DATABASE_URL is set (CI sets it), else on the SQLite default.

.PHONY: run test test-sqlite test-postgres install migrate demo lint format bench clean lock smoke chaos e2e-vllm

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/pip install --upgrade --quiet pip

# requirements/dev.txt: runtime + test tools, pinned with hashes by `make lock`.
$(VENV)/.installed: requirements/dev.txt | $(BIN)/python
	$(BIN)/pip install --quiet --require-hashes -r requirements/dev.txt
	touch $@

install: $(VENV)/.installed

migrate: install
	$(BIN)/python manage.py migrate --no-input

demo: migrate
	DEBUG=1 $(BIN)/python manage.py seed_demo

# Embedded default: SQLite under var/, eager Celery, the periodic jobs and a simulated agent
# in-process (see collectors' `run_demo`), served on http://$(HOST):$(PORT).
run: demo
	DEBUG=1 $(BIN)/python manage.py run_demo --addr $(HOST):$(PORT) $(RUN_ARGS)

test: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	@# The layers of docs/architecture.md (contracts in .importlinter).
	$(BIN)/lint-imports
	@# Models and migrations agree (checked on the SQLite default: no server needed).
	env -u DATABASE_URL PERFHUB_VAR_DIR=$$(mktemp -d) $(BIN)/python manage.py makemigrations --check --dry-run
	@# Two processes (the machine's two cores); a test file stays on one of them.
	$(BIN)/python -m pytest -n $(TEST_PROCESSES) --dist loadfile
	@if [ -n "$$DATABASE_URL" ]; then \
	  echo "== again on the SQLite default (browser tests and tests that use no database skipped) =="; \
	  env -u DATABASE_URL PERFHUB_VAR_DIR=$$(mktemp -d) $(BIN)/python -m pytest -n $(TEST_PROCESSES) --dist loadfile -m "not browser and not postgres and not e2e and not fuzz" $(NO_DATABASE_TESTS); \
	fi

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# Benchmarks print ratios against a reference run in the same process (docs/measurements.md).
BENCH_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/perfhub_bench
bench: install
	createdb -h 127.0.0.1 -U postgres perfhub_bench 2>/dev/null || true
	DATABASE_URL=$(BENCH_DATABASE_URL) $(BIN)/python bench/ingest.py
	DATABASE_URL=$(BENCH_DATABASE_URL) $(BIN)/python bench/copy_shape.py
	DATABASE_URL=$(BENCH_DATABASE_URL) $(BIN)/python bench/dashboard.py
	DATABASE_URL=$(BENCH_DATABASE_URL) $(BIN)/python bench/rollups.py
	DATABASE_URL=$(BENCH_DATABASE_URL) $(BIN)/python bench/alerts.py
	$(BIN)/python bench/gate_quality.py
	$(BIN)/python bench/planner.py --no-demo

# Re-pin after changing pyproject.toml: runtime (the image) and dev (make install, CI).
lock: install
	$(BIN)/pip-compile -q --no-emit-index-url --no-emit-find-links --generate-hashes --strip-extras --allow-unsafe -o requirements/runtime.txt pyproject.toml
	$(BIN)/pip-compile -q --no-emit-index-url --no-emit-find-links --generate-hashes --strip-extras --allow-unsafe --extra dev -o requirements/dev.txt pyproject.toml

clean:
	rm -rf $(VENV) var staticfiles .pytest_cache .ruff_cache

# The production shape (docker-compose.yml's commands as local processes on this machine's
# PostgreSQL and Redis, DEBUG off), driven from outside for about two minutes: deploy/smoke.py.
smoke: install
	$(BIN)/python deploy/smoke.py

# Faults under load on the same shape, on a private PostgreSQL cluster and Redis (the ones it
# restarts): a worker killed in a roll-up, PostgreSQL and Redis restarted, the spool's disk
# full, beat stopped; then every accepted sample must be rolled up exactly once and every alert
# told once (deploy/chaos.py; report in var/chaos-report.json).
chaos: install
	$(BIN)/python deploy/chaos.py

# A real engine: vLLM's CPU build (in .venv-vllm/, built once and kept) serves a tiny
# random-weight Llama; the real agent pushes its /metrics here, `vllm bench serve` runs against
# it and its file is imported; tests/vllm_engine/ checks both sides (PostgreSQL when
# DATABASE_URL is set, else SQLite). Fails, rather than skips, when the engine is missing.
VLLM_VENV ?= .venv-vllm
e2e-vllm: install
	PERFHUB_VLLM_VENV=$(VLLM_VENV) tests/vllm_engine/build_venv.sh
	PERFHUB_VLLM_PYTHON=$(VLLM_VENV)/bin/python PERFHUB_REQUIRE_VLLM=1 \
	  $(BIN)/python -m pytest tests/vllm_engine -m vllm -p no:xdist -p no:cacheprovider -rxX
