"""Nexmark queries on Apache Flink, for ``flowsql nexmark run --verify``
(``flowsql/nexmark/verify.py``) and ``benchmarks/nexmark_vs_flink.py``; executed by the
Flink virtual environment's interpreter (``.venv-flink/bin/python``), never by flowsql's.

Reads a JSON spec on standard input. Two modes:

``{"mode": "verify", "parallelism": 1, "tables": [DDL, ...], "queries": [[name, sql], ...]}``
    Creates the tables in a streaming ``TableEnvironment`` (a local mini cluster,
    ``table.local-time-zone`` UTC, ``parallelism.default`` set) and runs each query as its
    own job, collecting its changelog (``TableResult.collect()``: every row with its kind).
    Per query prints one line ``@@RESULT `` + JSON: ``query``, ``columns``, ``types``
    (Flink's logical types), ``changes`` (``[kind, [values]]``, kind ``+I``/``-U``/``+U``/
    ``-D``; a DECIMAL as its text, a TIMESTAMP as ``yyyy-MM-dd HH:mm:ss.SSS``) and ``error``
    (the first lines of the error that stopped planning or the job, else null).

``{"mode": "bench", "parallelism": 1, "events": N, "warm_tables": [...], "tables": [...],
"queries": [[name, sql], ...]}``
    One JVM runs the queries one after the other. Each: runs the query once over the warm-up tables into a blackhole table (so the JVM has
    loaded and compiled the planner and the operators), times a second such run
    (``small_seconds``: what a job costs over few events, its fixed cost of planning,
    code generation, deployment and start mostly), then replaces the tables with
    ``tables`` and times ``INSERT INTO`` a blackhole table from job submission to the job's
    end. Prints per query one line ``@@FIGURE `` + JSON: ``query``, ``seconds``,
    ``events_per_s``, ``small_seconds``, ``peak_rss_mib`` (this process and its children,
    the JVM among them, sampled during the timed job: the JVM's heap grows over the queries
    before and does not shrink, so this is an upper bound) and ``flink_version``, or
    ``error``.

Every statement of ``tables``/``warm_tables`` is a ``CREATE TABLE name ...``; the bench
mode drops the warm-up tables by those names before creating the timed ones.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import re
import sys
import time
from typing import Any

from flink_job import RssSampler
from pyflink.table import EnvironmentSettings, TableEnvironment
from pyflink.version import __version__ as flink_version

_KINDS = {0: "+I", 1: "-U", 2: "+U", 3: "-D"}
_TABLE_NAME = re.compile(r"CREATE\s+TABLE\s+`?(\w+)`?", re.IGNORECASE)


def environment(parallelism: int) -> Any:
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    config = env.get_config()
    config.set("parallelism.default", str(parallelism))
    config.set("table.local-time-zone", "UTC")
    return env


def columns(table: Any) -> list[tuple[str, str]]:
    """(name, type) of a planned query's columns; time attributes become plain types."""
    resolved = table._j_table.getResolvedSchema().getColumns()
    return [(c.getName(), c.getDataType().getLogicalType().copy(True).asSerializableString())
            for c in resolved]


def plain(value: Any) -> Any:
    """A collected value as JSON."""
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S.") + f"{value.microsecond // 1000:03d}"
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return value


def message(error: Exception) -> str:
    """The first lines of a Java or Python error, without the stack."""
    lines = [line for line in str(error).strip().splitlines()
             if line.strip() and not line.strip().startswith("at ")]
    return " | ".join(lines[:4])[:800]


def verify(spec: dict[str, Any]) -> None:
    env = environment(int(spec["parallelism"]))
    for ddl in spec["tables"]:
        env.execute_sql(ddl)
    for name, sql in spec["queries"]:
        started = time.perf_counter()
        entry: dict[str, Any] = {"query": name, "columns": None, "types": None,
                                 "changes": [], "error": None}
        try:
            table = env.sql_query(sql)
            named = columns(table)
            entry["columns"] = [n for n, _ in named]
            entry["types"] = [t for _, t in named]
            with table.execute().collect() as rows:
                for row in rows:
                    entry["changes"].append([_KINDS[row.get_row_kind().value],
                                             [plain(v) for v in row]])
        except Exception as e:  # noqa: BLE001 - a failing query is a result
            entry["error"] = message(e)
        print(f"{name}: {len(entry['changes'])} changes in "
              f"{time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
        print("@@RESULT " + json.dumps(entry), flush=True)


def _recreate(env: Any, ddls: list[str]) -> None:
    for ddl in ddls:
        match = _TABLE_NAME.match(ddl.strip())
        if match:
            env.execute_sql(f"DROP TABLE IF EXISTS `{match.group(1)}`")
        env.execute_sql(ddl)


def _blackhole(env: Any, name: str, sql: str) -> None:
    described = ", ".join(f"`{n}` {t}" for n, t in columns(env.sql_query(sql)))
    env.execute_sql(f"DROP TABLE IF EXISTS {name}")
    env.execute_sql(f"CREATE TABLE {name} ({described}) WITH ('connector' = 'blackhole')")


def bench_one(env: Any, spec: dict[str, Any], sql: str) -> dict[str, Any]:
    """One query of the bench mode: warm-up, the timed job over the warm-up tables, the
    timed job over the tables."""
    _recreate(env, spec["warm_tables"])
    _blackhole(env, "warm_sink", sql)
    env.execute_sql(f"INSERT INTO warm_sink {sql}").wait()
    started = time.perf_counter()
    env.execute_sql(f"INSERT INTO warm_sink {sql}").wait()
    small_seconds = time.perf_counter() - started
    _recreate(env, spec["tables"])
    _blackhole(env, "sink", sql)
    sampler = RssSampler()
    started = time.perf_counter()
    env.execute_sql(f"INSERT INTO sink {sql}").wait()
    seconds = time.perf_counter() - started
    peak = sampler.stop()
    events = int(spec["events"])
    return {"seconds": seconds, "events_per_s": events / seconds,
            "small_seconds": small_seconds, "peak_rss_mib": peak,
            "flink_version": flink_version}


def bench(spec: dict[str, Any]) -> None:
    env = environment(int(spec["parallelism"]))
    for name, sql in spec["queries"]:
        try:
            figures = {"query": name, **bench_one(env, spec, sql)}
        except Exception as e:  # noqa: BLE001 - a failing query is a result
            figures = {"query": name, "error": message(e)}
        print("@@FIGURE " + json.dumps(figures), flush=True)


def main() -> int:
    spec = json.loads(sys.stdin.read())
    if spec["mode"] == "verify":
        verify(spec)
    else:
        bench(spec)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
