"""Run one operator at a memory budget with its spill files under a given directory."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa

from flowsql.planner.config.units import parse_memory_budget
from flowsql.planner.physical import PhysicalPlan
from flowsql.planner.schema import to_arrow_schema
from flowsql.runtime.operator import MemoryBudget, OperatorContext
from flowsql.runtime.registry import create_operator
from flowsql.runtime.spill import SpillSpace


def spill_files(root: Path) -> list[str]:
    """Every file left below ``root``."""
    return [os.path.join(d, f) for d, _, files in os.walk(root) for f in files]


def drive_spilling(node: PhysicalPlan, *inputs: list[pa.RecordBatch], budget: str | None,
                   tmp: Path, batch_size: int = 1024) -> tuple[pa.Table, dict[str, Any]]:
    """The operator's output and its metrics; asserts that it deleted every spill file
    it wrote by the time it closed (before the space's own cleanup)."""
    limit = parse_memory_budget(budget, "execution.memory-budget") if budget else None
    memory = MemoryBudget(limit)
    context = OperatorContext("test", {"execution.batch-size": str(batch_size)}, memory,
                              SpillSpace([str(tmp)]))
    operator = create_operator(node)
    operator.open(context)
    out: list[pa.RecordBatch] = []
    for index in operator.input_order or range(len(inputs)):
        for batch in inputs[index]:
            out.extend(operator.process_batch(index, batch))
        out.extend(operator.end_input(index))
    operator.close()
    assert spill_files(tmp) == []
    assert memory.used == 0
    if limit is not None:
        assert memory.peak <= limit
    context.spill.cleanup()
    schema = to_arrow_schema(node.schema)
    table = pa.Table.from_batches(
        [pa.RecordBatch.from_arrays(b.columns, schema=schema) for b in out], schema=schema)
    return table, context.metrics
