"""A bounded run's result as one table, built identically wherever the plan ran (single
process or mini-cluster)."""

from __future__ import annotations

import pyarrow as pa

from flowsql.planner.physical import PhysicalPlan
from flowsql.planner.schema import to_arrow_schema
from flowsql.runtime.kernels.batches import conform


def result_table(plan: PhysicalPlan, batches: list[pa.RecordBatch]) -> pa.Table:
    """``batches`` (columns by position) as a table whose columns are named by the plan
    schema (duplicates allowed) and typed by it. A plan without columns keeps its row
    count."""
    schema = to_arrow_schema(plan.schema)
    if not plan.schema:
        rows = sum(b.num_rows for b in batches)
        return pa.Table.from_batches([pa.record_batch([pa.nulls(rows)], names=["_"]).select([])])
    return pa.Table.from_batches(
        [pa.RecordBatch.from_arrays([conform(c, f.type) for c, f in zip(b.columns, schema)],
                                    schema=schema) for b in batches], schema=schema)
