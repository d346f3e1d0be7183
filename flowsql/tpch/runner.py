"""The TPC-H runner: time one engine over the queries and check each answer against DuckDB.

An engine is a factory ``(data_dir) -> run_query``: it registers the eight tables once (not
timed per query) and returns a function that runs one query text to an Arrow table. Adding an
engine is one entry in :data:`ENGINES`.

Verification runs DuckDB on the same Parquet files in a separate process, so that neither its
time nor its memory is charged to the engine under test: the reported peak RSS is the engine's
(plus the interpreter's), and the oracle's seconds are reported apart.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import partial
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import pyarrow as pa

from flowsql.errors import FlowSQLError
from flowsql.tpch.generate import TABLES, missing_tables, table_path
from flowsql.tpch.queries import QUERY_NUMBERS, load_query
from flowsql.tpch.verify import compare_tables, is_ordered_query

QueryRunner = Callable[[str], pa.Table]
EngineFactory = Callable[[Path], QueryRunner]


def _sql_string(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def open_flowsql(data_dir: Path, engine: str = "local",
                 parallelism: int | None = None) -> QueryRunner:
    """A flowsql session on ``engine`` with the TPC-H tables registered from ``data_dir``;
    ``parallelism`` sets ``parallelism.default`` (None: the session's default)."""
    import flowsql

    options = {} if parallelism is None else {"parallelism.default": str(parallelism)}
    session = flowsql.connect(engine=engine, **options)
    for table in TABLES:
        session.sql(f"CREATE TABLE {table} WITH ('connector'='filesystem', "
                    f"'path'={_sql_string(table_path(data_dir, table))}, 'format'='parquet')")
    if parallelism is not None and parallelism > 1:
        # start the worker processes before any query is timed (a tiny query would
        # otherwise be planned on one subtask, in this process)
        session.set("optimizer.small-query-on-one-subtask", "false")
        session.sql("SELECT count(*) FROM region").to_arrow()
        session.set("optimizer.small-query-on-one-subtask", "true")
    return lambda sql: session.sql(sql).to_arrow()


def open_duckdb(data_dir: Path) -> QueryRunner:
    """DuckDB with default settings (all cores) and views over the same Parquet files."""
    import duckdb

    connection = duckdb.connect()
    for table in TABLES:
        connection.execute(f"CREATE VIEW {table} AS SELECT * FROM "
                           f"read_parquet({_sql_string(table_path(data_dir, table))})")
    return lambda sql: connection.sql(sql).to_arrow_table()


ENGINES: dict[str, EngineFactory] = {
    "local": partial(open_flowsql, engine="local"),
    "duckdb": open_duckdb,
    "spark": partial(open_flowsql, engine="spark"),
}


@dataclass
class QueryOutcome:
    """One query's result. ``times`` holds the engine's seconds per repetition; ``verified``
    is None when not verified; ``error`` is set when the engine failed (then no rows)."""

    query: int
    times: list[float] = field(default_factory=list)
    rows: int | None = None
    verified: bool | None = None
    verify_seconds: float | None = None
    error: str | None = None
    differences: list[str] = field(default_factory=list)

    @property
    def seconds(self) -> float | None:
        """Best of the repetitions: the least disturbed measurement of the engine."""
        return min(self.times) if self.times and self.error is None else None

    @property
    def failed(self) -> bool:
        return self.error is not None or self.verified is False


@dataclass
class RunReport:
    """Everything one run measured; ``to_json`` is what ``flowsql tpch run --json`` writes."""

    engine: str
    data_dir: str
    sf: float | None
    repeat: int
    verify: bool
    load_seconds: float
    outcomes: list[QueryOutcome] = field(default_factory=list)
    peak_rss_bytes: int = 0

    @property
    def failed(self) -> bool:
        return any(outcome.failed for outcome in self.outcomes)

    def to_json(self) -> dict[str, Any]:
        document = asdict(self)
        for outcome, entry in zip(self.outcomes, document["outcomes"]):
            entry["seconds"] = outcome.seconds
        return document


def peak_rss_bytes() -> int:
    """The peak resident set size of this process so far."""
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # Linux reports KiB


def describe_error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def check_data_dir(data_dir: Path, sf: float | None) -> None:
    """Fail with the command that produces the data when ``data_dir`` is incomplete."""
    absent = missing_tables(data_dir)
    if absent:
        scale = f"{sf:g}" if sf is not None else "<scale factor>"
        raise FlowSQLError(
            f"{data_dir} lacks the TPC-H table file(s) {', '.join(t + '.parquet' for t in absent)}; "
            f"generate them with: flowsql tpch gen --sf {scale} --out {data_dir}")


# --- the oracle process --------------------------------------------------------------------

_oracle_query: QueryRunner | None = None  # set once in each oracle process by _start_oracle


def _start_oracle(data_dir: str) -> None:
    global _oracle_query
    _oracle_query = open_duckdb(Path(data_dir))


def _run_in_oracle(sql: str) -> tuple[bytes, float]:
    assert _oracle_query is not None, "the oracle process was not initialized"
    started = time.perf_counter()
    table = _oracle_query(sql)
    seconds = time.perf_counter() - started
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes(), seconds


class DuckDBOracle:
    """Expected answers from DuckDB in a child process (see the module docstring for why).

    Use as a context manager; :meth:`expected` returns the table and DuckDB's seconds.
    """

    def __init__(self, data_dir: Path) -> None:
        self._pool = ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn"),
                                         initializer=_start_oracle,
                                         initargs=(str(Path(data_dir).resolve()),))

    def expected(self, sql: str) -> tuple[pa.Table, float]:
        payload, seconds = self._pool.submit(_run_in_oracle, sql).result()
        return pa.ipc.open_stream(payload).read_all(), seconds

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> DuckDBOracle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --- the run -------------------------------------------------------------------------------

def _run_one(run_query: QueryRunner, number: int, repeat: int,
             oracle: DuckDBOracle | None) -> QueryOutcome:
    outcome = QueryOutcome(query=number)
    sql = load_query(number)
    result: pa.Table | None = None
    try:
        for _ in range(repeat):
            started = time.perf_counter()
            result = run_query(sql)
            outcome.times.append(time.perf_counter() - started)
    except Exception as exc:  # the runner reports every engine failure and goes on
        outcome.error = describe_error(exc)
        return outcome
    assert result is not None
    outcome.rows = result.num_rows
    if oracle is not None:
        try:
            expected, outcome.verify_seconds = oracle.expected(sql)
        except Exception as exc:
            outcome.verified = False
            outcome.differences = [f"the DuckDB oracle failed: {describe_error(exc)}"]
            return outcome
        outcome.differences = compare_tables(result, expected, ordered=is_ordered_query(sql))
        outcome.verified = not outcome.differences
    return outcome


def run_benchmark(engine: str, data_dir: Path, queries: Sequence[int] = QUERY_NUMBERS,
                  verify: bool = False, repeat: int = 1, sf: float | None = None,
                  on_outcome: Callable[[QueryOutcome], None] | None = None,
                  parallelism: int | None = None) -> RunReport:
    """Run ``queries`` on ``engine`` over the Parquet files in ``data_dir``.

    A failing query is recorded and the run goes on; ``on_outcome`` sees each outcome as soon
    as it is known (for progress output); ``parallelism`` (the local engine only) sets
    ``parallelism.default``. Raises FlowSQLError only when the run cannot start: unknown
    engine, incomplete data directory, tables that do not load.
    """
    if engine not in ENGINES:
        raise FlowSQLError(f"unknown engine {engine!r}: choose one of {', '.join(ENGINES)}")
    if repeat < 1:
        raise FlowSQLError(f"repeat must be at least 1, got {repeat}")
    if parallelism is not None and engine != "local":
        raise FlowSQLError(f"parallelism applies to the local engine only, not {engine}")
    data_dir = Path(data_dir).resolve()
    check_data_dir(data_dir, sf)
    started = time.perf_counter()
    try:
        run_query = (ENGINES[engine](data_dir) if parallelism is None
                     else open_flowsql(data_dir, "local", parallelism))
    except Exception as exc:
        raise FlowSQLError(f"engine {engine} could not load the TPC-H tables: "
                           f"{describe_error(exc)}") from exc
    report = RunReport(engine=engine, data_dir=str(data_dir), sf=sf, repeat=repeat,
                       verify=verify, load_seconds=time.perf_counter() - started)
    oracle = DuckDBOracle(data_dir) if verify else None
    try:
        for number in queries:
            outcome = _run_one(run_query, number, repeat, oracle)
            report.outcomes.append(outcome)
            if on_outcome is not None:
                on_outcome(outcome)
    finally:
        if oracle is not None:
            oracle.close()
    report.peak_rss_bytes = peak_rss_bytes()
    return report

