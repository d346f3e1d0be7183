"""Runs many Flink SQL queries in one JVM for ``benchmarks/flink_diff.py``; executed by the
Flink virtual environment's interpreter (``.venv-flink/bin/python``), never by flowsql's.

Reads a JSON spec on standard input::

    {"parallelisms": [1, 2], "runs": 2, "chunk": 40,
     "settings": {"pipeline.auto-watermark-interval": "0", ...},
     "tables": ["CREATE TABLE orders (...) WITH (...)", ...],
     "queries": [["q_id", "SELECT ..."], ...]}

Every query is planned once with ``sql_query`` and optimized (``explain``), so a query
Flink cannot run is reported on its own; its resolved schema declares a ``print`` sink
whose identifier is ``<tag>|<query id>``, so each result row reaches standard output as
``<tag>|<id>[:<subtask>]> +I[...]`` (the changelog, row kinds included). For each
parallelism (``parallelism.default`` is set before its jobs) and each of ``runs`` repeats,
queries run in statement sets of ``chunk`` queries, one Flink job per set (shared sources
are read once); a set whose job fails is halved until the failing query is alone. Every
set has a fresh tag (``p<P>r<run>s<n>``), so a failed set's partial output is never
mistaken for a result. Progress goes to standard error.

The last line of standard output is ``@@DONE `` followed by JSON: per query its column
names and types, its error (planning or job failure) if any, and per parallelism and run
the tag whose output is complete.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from pyflink.table import EnvironmentSettings, TableEnvironment


def sink_columns(table: Any) -> list[tuple[str, str]]:
    """(name, type) of a planned query's columns; time attributes become plain types."""
    columns = table._j_table.getResolvedSchema().getColumns()
    return [(c.getName(), c.getDataType().getLogicalType().copy(True).asSerializableString())
            for c in columns]


class Runner:
    """One streaming TableEnvironment, the planned queries and the bookkeeping of tags
    and errors."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
        self.config = self.env.get_config()
        self.config.set("table.local-time-zone", "UTC")
        for key, value in spec.get("settings", {}).items():
            self.config.set(key, str(value))
        for ddl in spec["tables"]:
            self.env.execute_sql(ddl)
        self.sets = 0
        self.report: dict[str, dict[str, Any]] = {}

    def plan(self, qid: str, sql: str) -> Any:
        """The planned and optimized query, or None after recording why it cannot be."""
        entry = self.report.setdefault(qid, {"columns": None, "error": None, "runs": {}})
        try:
            table = self.env.sql_query(sql)
            entry["columns"] = sink_columns(table)
            table.explain()  # runs the optimizer: unsupported plans fail here, not in a set
            return table
        except Exception as e:  # noqa: BLE001 - any planning failure is a result
            entry["error"] = f"plan: {_message(e)}"
            return None

    def run_set(self, queries: list[tuple[str, Any]], tag: str) -> str | None:
        """Runs the planned queries as one job; the job's error, or None."""
        statements = self.env.create_statement_set()
        for index, (qid, table) in enumerate(queries):
            sink = f"sink_{tag}_{index}"
            columns = ", ".join(f"`{name}` {kind}"
                                for name, kind in self.report[qid]["columns"])
            self.env.execute_sql(
                f"CREATE TEMPORARY TABLE {sink} ({columns}) WITH ("
                f"'connector' = 'print', 'print-identifier' = '{tag}|{qid}')")
            statements.add_insert(sink, table)
        try:
            statements.execute().wait()
            sys.stdout.flush()
            return None
        except Exception as e:  # noqa: BLE001
            return _message(e)

    def run_parts(self, queries: list[tuple[str, Any]], prefix: str, key: str) -> None:
        """Runs the queries as one set; when the set fails, halves it until each failing
        query is alone, so one failing query costs a few jobs, not one per query."""
        self.sets += 1
        tag = f"{prefix}s{self.sets}"
        error = self.run_set(queries, tag)
        if error is None:
            for qid, _ in queries:
                self.report[qid]["runs"].setdefault(key, {})[prefix] = tag
        elif len(queries) == 1:
            self.report[queries[0][0]]["error"] = f"job: {error}"
        else:
            middle = len(queries) // 2
            self.run_parts(queries[:middle], prefix, key)
            self.run_parts(queries[middle:], prefix, key)

    def run(self, spec: dict[str, Any]) -> None:
        chunk = int(spec.get("chunk", 40))
        started = time.perf_counter()
        planned = [(qid, table) for qid, sql in spec["queries"]
                   if (table := self.plan(qid, sql)) is not None]
        _progress(f"planned {len(planned)} of {len(spec['queries'])} queries", started)
        for parallelism in spec["parallelisms"]:
            self.config.set("parallelism.default", str(parallelism))
            for run in range(int(spec.get("runs", 1))):
                for start in range(0, len(planned), chunk):
                    self.run_parts(planned[start:start + chunk], f"p{parallelism}r{run}",
                                   str(parallelism))
                _progress(f"parallelism {parallelism}, run {run} finished", started)


def _progress(what: str, started: float) -> None:
    print(f"[{time.perf_counter() - started:6.0f} s] {what}", file=sys.stderr, flush=True)


def _message(error: Exception) -> str:
    """The first lines of a Java or Python error, without the stack."""
    text = str(error).strip()
    lines = [line for line in text.splitlines() if line.strip() and not
             line.strip().startswith("at ")]
    return " | ".join(lines[:4])[:600]


def main() -> int:
    spec = json.loads(sys.stdin.read())
    runner = Runner(spec)
    runner.run(spec)
    sys.stdout.flush()
    print("@@DONE " + json.dumps(runner.report), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
