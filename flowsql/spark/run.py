"""Run a physical plan on Spark and return the result as Arrow with the plan's exact types.

Spark's Arrow output differs from the planner's types in representation only (TIMESTAMP
carries the session zone, VOID columns, nullability flags); each column is cast to the plan
schema's Arrow type so results compare equal to the local engine's.
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa

from flowsql.planner.config.settings import SettingValues
from flowsql.planner.physical import PhysicalPlan
from flowsql.planner.schema import to_arrow_schema
from flowsql.spark.compiler import build_dataframe, generate_pyspark_source
from flowsql.spark.errors import spark_errors
from flowsql.spark.progress import SparkProgress
from flowsql.spark.session import get_spark


def run_plan(plan: PhysicalPlan, settings: Mapping[str, str] | None = None,
             progress: SparkProgress | None = None) -> pa.Table:
    """Execute ``plan`` on the process's SparkSession (configured by ``spark.*`` settings).

    ``spark.broadcast-rows`` (default 1,000,000) is the largest estimated build side that
    gets a broadcast hint. Raises PlanError for what cannot be compiled and ExecutionError,
    with Spark's one-line message, for what fails in Spark. ``progress`` (optional) follows
    the query's Spark jobs; an interrupt (Ctrl-C) then cancels them.
    """
    settings = dict(settings or {})
    source = pyspark_program(plan, settings)
    spark = get_spark(settings)
    if progress is None:
        with spark_errors():
            table = build_dataframe(source, spark).toArrow()
        return restore_types(table, plan)
    progress.attach(spark)
    try:
        with spark_errors():
            table = build_dataframe(source, spark).toArrow()
    except KeyboardInterrupt:
        progress.cancel()
        raise
    finally:
        progress.detach()
    return restore_types(table, plan)


def pyspark_program(plan: PhysicalPlan, settings: Mapping[str, str] | None = None) -> str:
    """The program :func:`run_plan` executes for ``plan`` under ``settings`` (what
    ``EXPLAIN PYSPARK`` shows): the settings that shape the program are read here only, so
    the shown program and the one that runs cannot differ."""
    broadcast_rows = SettingValues(dict(settings or {})).integer("spark.broadcast-rows")
    return generate_pyspark_source(plan, broadcast_rows=broadcast_rows)


def restore_types(table: pa.Table, plan: PhysicalPlan) -> pa.Table:
    """Cast Spark's Arrow columns to the plan's output schema (names may repeat)."""
    schema = to_arrow_schema(plan.schema)
    columns = [column.cast(field.type) if not column.type.equals(field.type) else column
               for column, field in zip(table.columns, schema)]
    return pa.Table.from_arrays(columns, schema=schema)
