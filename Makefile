# One command file: install, demo, test, lint, golden, bench.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SF ?= 0.1

.PHONY: install demo kafka-demo test test-all lint golden bench bench-flink flink-diff clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: install
	@test -f data/sf$(SF)/lineitem.parquet || $(BIN)/flowsql tpch gen --sf $(SF) --out data/sf$(SF)
	$(BIN)/flowsql tpch run --sf $(SF) --data data/sf$(SF) --engine local --verify

kafka-demo: install
	$(BIN)/python examples/kafka_demo.py

test: install
	$(BIN)/pytest -n 2 -m "not slow"

test-all: install
	$(BIN)/pytest -n 2

lint: install
	$(BIN)/ruff check flowsql tests
	$(BIN)/mypy flowsql
	$(BIN)/lint-imports

golden: install
	FLOWSQL_UPDATE_GOLDEN=1 $(BIN)/pytest tests/golden -q

bench: install
	$(BIN)/pip install --quiet -e '.[dev,bench]'
	@test -f data/sf1/lineitem.parquet || $(BIN)/flowsql tpch gen --sf 1 --out data/sf1
	$(BIN)/python benchmarks/tpch_local_vs_duckdb.py --sf 1 --data data/sf1 --repeat 3 --markdown
	$(BIN)/python benchmarks/buffer_timeout_latency.py --markdown
	$(BIN)/python benchmarks/streaming_throughput.py --markdown

bench-flink: install
	$(BIN)/python benchmarks/flink_baseline.py --markdown --json data/flink_baseline.json

# Flink fidelity: the streaming corpus on Flink and flowsql (FLINK_DIFF_ARGS=--write-fixtures
# refreshes tests/flink/expected; --from-fixtures compares without Flink)
flink-diff: install
	$(BIN)/python benchmarks/flink_diff.py --json data/flink_diff/verdicts.json $(FLINK_DIFF_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache
