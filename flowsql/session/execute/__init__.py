"""Executing parsed statements against a session: DDL, SET, SHOW, DESCRIBE, EXPLAIN, queries.

This module is where the layers meet: the sql layer parses and binds, the optimizer rewrites
and picks physical operators, the runtime executes. It sits above all of them, beside
``session.py``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import sqlglot

from flowsql.errors import CatalogError, FlowSQLError, PlanError
from flowsql.planner import types as T
from flowsql.planner.catalog import TableEntry, ViewEntry
from flowsql.planner.logical import LogicalPlan
from flowsql.planner.physical import PhysicalPlan
from flowsql.sql.bind_query import QueryBinder, bind_table
from flowsql.sql.dialect import DIALECT
from flowsql.sql.statement_parser import (
    CreateTableStatement,
    CreateViewStatement,
    DescribeStatement,
    DropStatement,
    ExplainStatement,
    InsertStatement,
    QueryStatement,
    SetStatement,
    ShowTablesStatement,
    Statement,
    parse_one,
    parse_statements,
)

if TYPE_CHECKING:
    from flowsql.session.result import Result
    from flowsql.session.session import Session

__all__ = ["execute_statement", "parse_one_statement", "parse_statements", "plan_query"]

parse_one_statement = parse_one

SUPPORTED_FORMATS = ("parquet", "csv", "json")
#: connectors a table can only be written to (INSERT INTO)
SINK_ONLY_CONNECTORS = ("print", "blackhole")


def _parse_view(sql: str):  # type: ignore[no-untyped-def]
    return sqlglot.parse_one(sql, read=DIALECT)


def bind_query(session: Session, statement: QueryStatement | ExplainStatement) -> LogicalPlan:
    return QueryBinder(session.catalog, statement.text, _parse_view).bind(statement.ast)


def streaming_mode(session: Session) -> bool:
    """Whether queries run as streams (``execution.runtime-mode`` = ``streaming``)."""
    from flowsql.optimizer.plan_window_aggregate import runtime_mode

    if runtime_mode(session.settings) != "streaming":
        return False
    if session.settings.get("engine") == "spark":
        raise PlanError("the spark engine runs bounded queries in batch mode only; SET "
                        "'execution.runtime-mode' = 'batch' or use the local engine")
    return True


def plan_query(session: Session, statement: QueryStatement | ExplainStatement):  # type: ignore[no-untyped-def]
    """Bind, optimize and physically plan a query: (logical, optimized, physical)."""
    logical, optimized, physical, _ = plan_statement(session, statement)
    return logical, optimized, physical


def plan_statement(session: Session, statement: QueryStatement | ExplainStatement,
                   sink: Callable[[PhysicalPlan], PhysicalPlan] | None = None):  # type: ignore[no-untyped-def]
    """(logical, optimized, physical, stream info or None in batch mode); ``sink`` wraps
    the physical plan (INSERT INTO) before the streaming pass."""
    from flowsql.optimizer import optimize, to_physical

    logical = bind_query(session, statement)
    optimized = optimize(logical, session.settings)
    physical = to_physical(optimized.plan, session.settings, optimized.context.estimator)
    if sink is not None:
        physical = sink(physical)
    if streaming_mode(session):
        from flowsql.optimizer.streaming import to_streaming
        from flowsql.optimizer.streaming.distribution import enforce_streaming_distribution

        physical, info = to_streaming(physical, session.settings)
        physical = enforce_streaming_distribution(physical, session.settings)
        return logical, optimized, physical, info
    if session.settings.get("engine") != "spark":
        from flowsql.optimizer.distribution import enforce_distribution

        physical = enforce_distribution(physical, session.settings)
    return logical, optimized, physical, None


def explain_text(logical: LogicalPlan, optimized, physical: PhysicalPlan,  # type: ignore[no-untyped-def]
                 verbose: bool = False) -> str:
    from flowsql.planner.explain import explain_logical, explain_physical

    parts = ["== Logical Plan ==", explain_logical(logical), "",
             "== Optimized Logical Plan ==", explain_logical(optimized.plan), "",
             "== Physical Plan ==", explain_physical(physical)]
    if verbose:
        parts += ["", "== Rules That Changed The Plan ==", *optimized.changed_by]
    return "\n".join(parts)


def execute_statement(session: Session, statement: Statement, text: str) -> Result:
    handler = _HANDLERS.get(type(statement))
    if handler is None:
        raise FlowSQLError(f"unsupported statement: {statement.source[:40]}")
    return handler(session, statement)


def _run_physical(session: Session, physical: PhysicalPlan) -> pa.Table:
    """Run a physical plan on the session's engine."""
    if session.settings.get("engine") == "spark":
        from flowsql.spark import run_plan

        return run_plan(physical, session.settings)
    from flowsql.optimizer.distribution import parallelism

    workers = parallelism(session.settings)
    if workers > 1:
        from flowsql.runtime.parallel import ParallelRunner

        if session.parallel_runner is None:
            session.parallel_runner = ParallelRunner()
        return session.parallel_runner.execute(physical, session.settings, workers)  # type: ignore[no-any-return]
    from flowsql.runtime.executor import execute

    return execute(physical, session.settings)


def _query(session: Session, statement: QueryStatement) -> Result:
    from flowsql.session.result import Result

    logical, optimized, physical, info = plan_statement(session, statement)
    if info is not None:
        return _stream_query(session, physical, info,
                             explain_text(logical, optimized, physical))
    started = time.perf_counter()
    table = _run_physical(session, physical)
    elapsed = time.perf_counter() - started
    return Result("query", table=table,
                  plan_text=explain_text(logical, optimized, physical),
                  metrics={"seconds": elapsed})


def _stream_query(session: Session, physical: PhysicalPlan, info: Any, plan_text: str
                  ) -> Result:
    """A SELECT in streaming mode: a changelog that runs when it is read --
    ``Result.stream()`` shows the changes as they happen, ``to_arrow()`` runs a query over
    bounded input to its end and returns the final rows."""
    from flowsql.planner.schema import to_arrow_schema
    from flowsql.runtime.streaming.job import ChangelogStream
    from flowsql.session.result import Result

    stream = ChangelogStream(lambda: _streaming_run(session, physical),
                             to_arrow_schema(physical.schema), info.bounded)
    return Result("query", plan_text=plan_text, changelog=stream)


def _streaming_run(session: Session, physical: PhysicalPlan) -> Any:
    """A run of a streaming plan: in this process, or on the session's workers when
    ``parallelism.default`` > 1 (the plan then has its exchanges)."""
    from flowsql.optimizer.distribution import parallelism

    settings = dict(session.settings)
    workers = parallelism(settings)
    if workers > 1:
        from flowsql.runtime.parallel import ParallelRunner

        if session.parallel_runner is None:
            session.parallel_runner = ParallelRunner()
        return session.parallel_runner.stream(physical, settings, workers)
    from flowsql.runtime.streaming.executor import StreamingRun

    return StreamingRun(physical, settings)


def _insert(session: Session, statement: InsertStatement) -> Result:
    """``INSERT INTO table query``: submits a job and returns its handle at once."""
    from flowsql.runtime.streaming.job import BoundedRun, Job
    from flowsql.session.result import Result

    entry = session.catalog.get(statement.table)
    if not isinstance(entry, TableEntry):
        problem = "is a view" if entry is not None else "does not exist"
        raise CatalogError(f"INSERT INTO {statement.table}: table '{statement.table}' "
                           f"{problem}")
    query = QueryStatement(statement.text, statement.start, statement.end, ast=statement.ast)
    logical, optimized, physical, info = plan_statement(
        session, query, sink=lambda plan: sink_plan(plan, entry, statement.columns))
    if info is not None:
        run: Any = _streaming_run(session, physical)
    else:
        run = BoundedRun(physical, dict(session.settings))
    job = Job(f"INSERT INTO {entry.name}", run)
    session.jobs.append(job)
    return Result("job", message=f"Job {job.id} submitted: INSERT INTO {entry.name}",
                  plan_text=explain_text(logical, optimized, physical), job=job)


def sink_plan(plan: PhysicalPlan, table: TableEntry, columns: tuple[str, ...] | None
              ) -> PhysicalPlan:
    """``plan`` cast to ``table``'s columns (all, or the named ones with NULL for the
    rest) and written by a SinkExec."""
    from flowsql.planner.expressions import Cast, Expr, Literal
    from flowsql.planner.physical import ProjectExec
    from flowsql.planner.physical_streaming import SinkExec
    from flowsql.planner.schema import Field

    names = [f.name for f in table.schema]
    targets = list(columns) if columns is not None else names
    lowered = {n.lower(): n for n in names}
    unknown = [c for c in targets if c.lower() not in lowered]
    if unknown:
        raise CatalogError(f"INSERT INTO {table.name}: no column {unknown[0]} (columns: "
                           f"{', '.join(names)})")
    if len(targets) != len(plan.schema):
        raise PlanError(f"INSERT INTO {table.name}: the query has {len(plan.schema)} "
                        f"columns, the target {len(targets)} ({', '.join(targets)})")
    by_target = {lowered[c.lower()]: f for c, f in zip(targets, plan.schema)}
    exprs: list[Expr] = []
    for field in table.schema:
        source = by_target.get(field.name)
        if source is None:
            exprs.append(Literal(None, field.type))
        elif source.dtype.equals(field.type):
            exprs.append(source.ref())
        else:
            exprs.append(Cast(source.ref(), field.type))
    fields = tuple(Field.fresh(f.name, f.type) for f in table.schema)
    project = ProjectExec(plan, tuple(exprs), fields, plan.est_rows)
    return SinkExec(project, table, plan.est_rows)


def _explain(session: Session, statement: ExplainStatement) -> Result:
    from flowsql.session.result import Result

    logical, optimized, physical = plan_query(session, statement)
    if statement.mode == "pyspark":
        from flowsql.spark import generate_pyspark_source

        source = generate_pyspark_source(physical)
        return Result("explain", table=pa.table({"plan": source.split("\n")}), plan_text=source)
    text = explain_text(logical, optimized, physical, verbose=statement.mode == "verbose")
    return Result("explain", table=pa.table({"plan": text.split("\n")}), plan_text=text)


def _create_table(session: Session, statement: CreateTableStatement) -> Result:
    from flowsql.session.result import Result

    options = dict(statement.options)
    connector = options.setdefault("connector", "filesystem")
    if connector == "filesystem":
        entry = _filesystem_table(statement, options)
    elif connector == "datagen":
        entry = _datagen_table(statement, options)
    elif connector in SINK_ONLY_CONNECTORS:
        schema = _declared_schema(statement)
        if schema is None:
            raise CatalogError(f"table '{statement.name}': the {connector} connector needs a "
                               "column list")
        entry = TableEntry(statement.name, schema, options, watermark=statement.watermark,
                           computed=statement.computed)
    else:
        raise CatalogError(f"unknown connector '{connector}' for table '{statement.name}' "
                           "(supported: filesystem, datagen, print, blackhole)")
    session.catalog.add(entry, replace=statement.replace, if_not_exists=statement.if_not_exists)
    return Result("ddl", message=f"Table '{statement.name}' created")


def _declared_schema(statement: CreateTableStatement) -> pa.Schema | None:
    if statement.columns is None:
        return None
    return pa.schema([pa.field(c.name, c.dtype, c.nullable) for c in statement.columns])


def _filesystem_table(statement: CreateTableStatement, options: dict[str, str]) -> TableEntry:
    from flowsql.runtime.connectors.filesystem import infer_schema, table_statistics

    if "path" not in options:
        raise CatalogError(f"table '{statement.name}': the filesystem connector needs 'path'")
    fmt = options.setdefault("format", "parquet").lower()
    options["format"] = fmt
    if fmt not in SUPPORTED_FORMATS:
        raise CatalogError(f"table '{statement.name}': unknown format '{fmt}' "
                           f"(supported: {', '.join(SUPPORTED_FORMATS)})")
    options["path"] = os.path.abspath(os.path.expanduser(options["path"]))
    schema = _declared_schema(statement)
    if schema is None:
        schema = infer_schema(options)
    return TableEntry(statement.name, schema, options, table_statistics(options),
                      statement.watermark, statement.computed)


def _datagen_table(statement: CreateTableStatement, options: dict[str, str]) -> TableEntry:
    """Validated now (bad options fail the DDL, not the first query)."""
    from flowsql.planner.catalog import TableStatistics
    from flowsql.runtime.connectors.datagen import DatagenTable

    schema = _declared_schema(statement)
    if schema is None:
        raise CatalogError(f"table '{statement.name}': the datagen connector needs a column "
                           "list")
    table = DatagenTable(schema, options)
    return TableEntry(statement.name, schema, options,
                      TableStatistics(row_count=table.total_rows), statement.watermark,
                      statement.computed)


def _create_view(session: Session, statement: CreateViewStatement) -> Result:
    from flowsql.session.result import Result

    entry = ViewEntry(statement.name, statement.query_sql, statement.column_names)
    # Bind once now so a broken view is reported at creation, not at first use.
    QueryBinder(session.catalog, statement.query_sql, _parse_view).bind(
        _parse_view(statement.query_sql))
    session.catalog.add(entry, replace=statement.replace, if_not_exists=statement.if_not_exists)
    return Result("ddl", message=f"View '{statement.name}' created")


def _drop(session: Session, statement: DropStatement) -> Result:
    from flowsql.session.result import Result

    kind = TableEntry if statement.kind == "table" else ViewEntry
    session.catalog.drop(statement.name, kind, if_exists=statement.if_exists)
    return Result("ddl", message=f"{statement.kind.capitalize()} '{statement.name}' dropped")


def _show_tables(session: Session, statement: ShowTablesStatement) -> Result:
    from flowsql.session.result import Result

    names = session.catalog.names()
    kinds = ["view" if isinstance(session.catalog.get(n), ViewEntry) else "table"
             for n in names]
    return Result("show", table=pa.table({"name": pa.array(names, pa.string()),
                                          "kind": pa.array(kinds, pa.string())}))


def _describe(session: Session, statement: DescribeStatement) -> Result:
    from flowsql.session.result import Result

    entry = session.catalog.get(statement.name)
    if entry is None:
        raise CatalogError(f"table '{statement.name}' does not exist")
    if isinstance(entry, TableEntry) and entry.computed:
        fields = [(f.name, f.dtype, f.nullable) for f in bind_table(entry).schema]
    elif isinstance(entry, TableEntry):
        fields = [(f.name, T.normalize_storage_type(f.type), f.nullable) for f in entry.schema]
    else:
        plan = QueryBinder(session.catalog, entry.sql, _parse_view).bind(_parse_view(entry.sql))
        names = list(entry.column_names) + [f.name for f in plan.schema][len(entry.column_names):]
        fields = [(n, f.dtype, f.nullable) for n, f in zip(names, plan.schema)]
    return Result("describe", table=pa.table({
        "name": pa.array([f[0] for f in fields], pa.string()),
        "type": pa.array([T.sql_name(f[1]) for f in fields], pa.string()),
        "null": pa.array(["YES" if f[2] else "NO" for f in fields], pa.string()),
    }))


def _set(session: Session, statement: SetStatement) -> Result:
    from flowsql.session.result import Result
    from flowsql.session.session import DEFAULT_SETTINGS

    if statement.reset:
        if statement.key is None:
            session.settings = dict(DEFAULT_SETTINGS)
        elif statement.key in DEFAULT_SETTINGS:
            session.settings[statement.key] = DEFAULT_SETTINGS[statement.key]
        else:
            session.settings.pop(statement.key, None)
        return Result("set", message="reset")
    if statement.key is None:
        keys = sorted(session.settings)
        return Result("show", table=pa.table({
            "key": pa.array(keys, pa.string()),
            "value": pa.array([session.settings[k] for k in keys], pa.string())}))
    assert statement.value is not None
    session.set(statement.key, statement.value)
    return Result("set", message=f"{statement.key} = {statement.value}")


_HANDLERS: dict[type, Callable[[Session, Any], Result]] = {
    QueryStatement: _query,
    InsertStatement: _insert,
    ExplainStatement: _explain,
    CreateTableStatement: _create_table,
    CreateViewStatement: _create_view,
    DropStatement: _drop,
    ShowTablesStatement: _show_tables,
    DescribeStatement: _describe,
    SetStatement: _set,
}
