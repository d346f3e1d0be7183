"""Hand-built logical plans over tables of chosen sizes, physically planned by the search,
for tests of which physical alternative the cost model picks."""

from __future__ import annotations

import pyarrow as pa

from flowsql.optimizer.physical_passes import plan_physical
from flowsql.planner.catalog import TableEntry, TableStatistics
from flowsql.planner.explain import explain_physical
from flowsql.planner.logical import LogicalPlan
from flowsql.planner.physical import PhysicalPlan

INT = pa.int64()


def sized(name: str, rows: int, *columns: str, distinct: dict[str, int] | None = None
          ) -> TableEntry:
    """A table of int64 ``columns`` with ``rows`` rows (and distinct-value bounds)."""
    schema = pa.schema([pa.field(c, INT) for c in columns])
    return TableEntry(name, schema, {"path": f"{name}.parquet"},
                      TableStatistics(rows, distinct_bounds=distinct or {}))


def planned(plan: LogicalPlan, parallelism: int = 2,
            settings: dict[str, str] | None = None) -> PhysicalPlan:
    """The physical plan of ``plan`` at ``parallelism`` (parallel plans forced unless
    ``settings`` say otherwise), sanity-checked."""
    values = {"parallelism.default": str(parallelism),
              "optimizer.small-query-on-one-subtask": "false", **(settings or {})}
    return plan_physical(plan, values).physical


def lines(plan: PhysicalPlan) -> list[str]:
    """EXPLAIN's lines of ``plan``, stripped of indentation and estimates."""
    return [line.strip().split(" rows=")[0] for line in explain_physical(plan).splitlines()]


def exchanges(plan: PhysicalPlan) -> list[str]:
    return sorted(line for line in lines(plan) if line.startswith("Exchange"))
