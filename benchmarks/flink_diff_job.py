"""Runs many Flink SQL queries in one JVM for ``benchmarks/flink_diff.py``; executed by the
Flink virtual environment's interpreter (``.venv-flink/bin/python``), never by flowsql's.

Reads a JSON spec on standard input::

    {"parallelism": 2, "runs": 2, "chunk": 40,
     "settings": {"pipeline.auto-watermark-interval": "0", ...},
     "tables": ["CREATE TABLE orders (...) WITH (...)", ...],
     "queries": [["q_id", "SELECT ..."], ...]}

Every query is planned with ``sql_query``; its resolved schema declares a ``print`` sink
whose identifier is ``<tag>|<query id>``, so each result row reaches standard output as
``<tag>|<id>[:<subtask>]> +I[...]`` (the changelog, row kinds included). Queries run in
statement sets of ``chunk`` queries, one Flink job per set (shared sources are read once);
a set whose job fails is re-run one query per job so one failing query does not hide the
others. Each of ``runs`` repeats uses fresh tags (``r<run>a<attempt>``), so a failed
attempt's partial output is never mistaken for a result.

The last line of standard output is ``@@DONE `` followed by JSON: per query its column
names and types, its error (planning or job failure) if any, and per run the tag whose
output is complete.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from pyflink.table import EnvironmentSettings, TableEnvironment


def sink_columns(table: Any) -> list[tuple[str, str]]:
    """(name, type) of a planned query's columns; time attributes become plain types."""
    columns = table._j_table.getResolvedSchema().getColumns()
    return [(c.getName(), c.getDataType().getLogicalType().copy(True).asSerializableString())
            for c in columns]


class Runner:
    """One streaming TableEnvironment and the bookkeeping of tags and errors."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
        config = self.env.get_config()
        config.set("parallelism.default", str(spec["parallelism"]))
        config.set("table.local-time-zone", "UTC")
        for key, value in spec.get("settings", {}).items():
            config.set(key, str(value))
        for ddl in spec["tables"]:
            self.env.execute_sql(ddl)
        self.sinks = 0
        self.report: dict[str, dict[str, Any]] = {}

    def plan(self, qid: str, sql: str) -> Any:
        """The planned query, or None after recording its planning error."""
        entry = self.report.setdefault(qid, {"columns": None, "error": None, "runs": {}})
        try:
            table = self.env.sql_query(sql)
            entry["columns"] = sink_columns(table)
            return table
        except Exception as e:  # noqa: BLE001 - any planning failure is a result
            entry["error"] = f"plan: {_message(e)}"
            return None

    def run_set(self, queries: list[tuple[str, Any]], tag: str) -> str | None:
        """Runs the planned queries as one job; the job's error, or None."""
        statements = self.env.create_statement_set()
        for qid, table in queries:
            self.sinks += 1
            sink = f"sink_{self.sinks}"
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

    def run(self, spec: dict[str, Any]) -> None:
        chunk = int(spec.get("chunk", 40))
        queries = [(qid, sql) for qid, sql in spec["queries"]]
        for run in range(int(spec.get("runs", 1))):
            planned = [(qid, table) for qid, sql in queries
                       if (table := self.plan(qid, sql)) is not None]
            for start in range(0, len(planned), chunk):
                part = planned[start:start + chunk]
                tag = f"r{run}a0c{start}"
                error = self.run_set(part, tag)
                if error is None:
                    for qid, _ in part:
                        self.report[qid]["runs"][str(run)] = tag
                    continue
                for index, (qid, table) in enumerate(part):
                    single = f"r{run}a1c{start}q{index}"
                    single_error = self.run_set([(qid, table)], single)
                    if single_error is None:
                        self.report[qid]["runs"][str(run)] = single
                    else:
                        self.report[qid]["error"] = f"job: {single_error}"
            print(f"@@RUN {run} finished", file=sys.stderr, flush=True)


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
