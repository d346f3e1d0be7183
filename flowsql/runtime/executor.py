"""Single-process execution of a physical plan: one operator per node, pulled lazily.

Each node becomes a generator of its output batches. A node's generator opens its
operator, then feeds it its inputs one after the other in the operator's ``input_order``
(a hash join reads its build side to the end before the probe side), calling
``process_batch`` per batch and ``end_input`` after each input, and closes the operator
last -- also when the consumer stops early (LIMIT) or an error unwinds the pipeline.
Nothing is materialized between operators: only blocking operators hold data, and they
account it against ``execution.memory-budget``.

Errors: a :class:`FlowSQLError` raised anywhere passes through unchanged; any other
exception inside an operator hook becomes an :class:`ExecutionError` naming the operator
(node type and a short description) so the user sees which step of the plan failed.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import pyarrow as pa

from flowsql.errors import ExecutionError, FlowSQLError
from flowsql.planner.config.settings import SettingValues
from flowsql.planner.physical import PhysicalPlan
from flowsql.planner.schema import to_arrow_schema
from flowsql.runtime.operator import MemoryBudget, Operator, OperatorContext
from flowsql.runtime.operators.batches import conform
from flowsql.runtime.operators.contract import Limiting, Source
from flowsql.runtime.registry import create_operator, describe

_T = TypeVar("_T")


@dataclass
class _Job:
    """What all operators of one execution share."""

    settings: dict[str, str]
    memory: MemoryBudget
    next_id: int = 0


def _job(settings: dict[str, str]) -> _Job:
    values = SettingValues(settings)
    values.integer("execution.batch-size")  # checked once here, read by every operator
    return _Job(dict(settings), MemoryBudget(values.memory_size("execution.memory-budget")))


def _guarded(label: str, fn: Callable[..., _T], *args: Any) -> _T:
    """Run one operator hook, turning unexpected exceptions into ExecutionError."""
    try:
        return fn(*args)
    except FlowSQLError:
        raise
    except Exception as exc:
        raise ExecutionError(f"{label} failed: {type(exc).__name__}: {exc}") from exc


def _emitted(label: str, fn: Callable[..., Iterable[pa.RecordBatch]],
             *args: Any) -> list[pa.RecordBatch]:
    """Call a hook and materialize what it emits (hooks may be generators)."""
    return _guarded(label, lambda: [b for b in fn(*args) if b.num_rows])


def _run(node: PhysicalPlan, job: _Job) -> Generator[pa.RecordBatch, None, None]:
    job.next_id += 1
    label = f"{describe(node)} [operator {job.next_id}]"
    operator: Operator = _guarded(label, create_operator, node)
    context = OperatorContext(name=label, settings=job.settings, memory=job.memory)
    _guarded(label, operator.open, context)
    try:
        if isinstance(operator, Source):
            produced = operator.produce()
            while (batch := _guarded(label, next, produced, None)) is not None:
                if batch.num_rows:
                    yield batch
            return
        order = operator.input_order or tuple(range(len(node.inputs)))
        for index in order:
            yield from _feed(operator, index, _run(node.inputs[index], job), label)
    finally:
        _guarded(label, operator.close)


def _feed(operator: Operator, index: int, child: Generator[pa.RecordBatch, None, None],
          label: str) -> Iterator[pa.RecordBatch]:
    """Push one input through the operator, then signal its end."""
    try:
        for batch in child:
            yield from _emitted(label, operator.process_batch, index, batch)
            if isinstance(operator, Limiting) and operator.satisfied:
                break
    finally:
        child.close()
    yield from _emitted(label, operator.end_input, index)


def execute_batches(plan: PhysicalPlan, settings: dict[str, str]) -> Iterator[pa.RecordBatch]:
    """The plan's output as batches whose columns follow ``plan.schema`` by position."""
    return _run(plan, _job(settings))


def execute(plan: PhysicalPlan, settings: dict[str, str]) -> pa.Table:
    """Run the plan to completion; columns are named by the plan schema (duplicates
    allowed) and typed by it."""
    schema = to_arrow_schema(plan.schema)
    batches = list(execute_batches(plan, settings))
    if not plan.schema:
        rows = sum(b.num_rows for b in batches)
        return pa.Table.from_batches([pa.record_batch([pa.nulls(rows)], names=["_"]).select([])])
    return pa.Table.from_batches(
        [pa.RecordBatch.from_arrays([conform(c, f.type) for c, f in zip(b.columns, schema)],
                                    schema=schema) for b in batches], schema=schema)
