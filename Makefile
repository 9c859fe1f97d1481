# The two commands: `make demo` and `make test`. Both create (or refresh) .venv from requirements.lock.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

CHROMIUM ?= /usr/bin/chromium

.PHONY: demo test lint unit lock clean browser node bench test-spark

$(STAMP): requirements.lock pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10))' || \
	  { echo "tracevals needs Python 3.10 or newer: run make PYTHON=python3.11 ..."; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --require-hashes -r requirements.lock
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/tracevals demo --out demo-out

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

# The HTML report test drives Debian's Chromium (tests/test_report_browser.py); installs it once.
browser:
	@TRACEVALS_CHROMIUM=$(CHROMIUM) scripts/install-chromium.sh

# Node's OTLP exporters for tests/test_collector_node_exporters.py (tests/node/package-lock.json), installed
# once per lock into ~/.cache/tracevals/node-exporters (or $$TRACEVALS_NODE_EXPORTERS).
node:
	@scripts/install-node-exporters.sh

# On every core (pytest-xdist), a test file per worker at a time: module fixtures are built once.
unit: $(STAMP) browser node
	TRACEVALS_CHROMIUM=$(CHROMIUM) $(BIN)/python -m pytest -q -p no:cacheprovider -n auto --dist loadfile

# `make test` = lint + the whole suite. pytest's exit 5 (no tests collected) is a failure here.
test: lint unit

# Every benchmark, peers included (each in its own venv under bench/.venvs), into bench/RESULTS.md.
bench: $(STAMP)
	$(BIN)/python bench/run_all.py

# The Spark adapter's test, outside CI (pyspark ~650 MB and Java 17): pyspark from bench/.venvs/spark
# (bench/peers/spark.txt, made on first use), on PYTHONPATH beside the project's environment.
test-spark: $(STAMP)
	PYTHONPATH="$$($(BIN)/python bench/spark_path.py)" $(BIN)/python -m pytest tests/test_engine_spark.py

# Re-resolve the lock after changing dependencies in pyproject.toml (needs `uv`).
lock:
	uv pip compile pyproject.toml --extra dev --extra ray --extra ui --universal --python-version 3.10 --generate-hashes -o requirements.lock

clean:
	rm -rf $(VENV) demo-out build *.egg-info
