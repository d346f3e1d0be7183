"""CASE, COALESCE, NULLIF, GREATEST, LEAST.

CASE evaluates each branch over the whole batch (one kernel call per branch) and picks per
row. A branch that fails on rows it was never meant to see (``CASE WHEN x = 0 THEN 0 ELSE
10 % x END``) is evaluated again over just the rows that select it, as DuckDB does; the
common, failure-free case pays nothing for that guarantee.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.planner.expressions import Call
from flowsql.runtime.expressions.comparison import comparison_operands
from flowsql.runtime.expressions.registry import Datum, Node, Run, register
from flowsql.runtime.expressions.support import as_array, conform, typed_null


def _branch_value(node: Node, batch: pa.RecordBatch, rows: Datum,
                  dtype: pa.DataType) -> Datum:
    """``node`` over ``batch``, or over only the selected ``rows`` if the whole batch fails."""
    try:
        return conform(node.run(batch), dtype)
    except ExecutionError:
        if isinstance(rows, pa.Scalar):
            raise
        subset = conform(node.run(batch.filter(rows)), dtype)
        subset = as_array(subset, int(pc.sum(rows).as_py() or 0))
        return pc.replace_with_mask(pa.nulls(batch.num_rows, dtype), rows, subset)


def build_case(conditions: list[Node], values: list[Node], otherwise: Node,
               dtype: pa.DataType) -> Run:
    pairs = list(zip(conditions, values))

    def case(batch: pa.RecordBatch) -> Datum:
        taken: Datum = pa.scalar(False)
        chosen: list[tuple[Datum, Node]] = []
        for condition, value in pairs:
            hit = pc.fill_null(condition.run(batch), False)
            hit = pc.and_not(hit, taken)
            chosen.append((hit, value))
            taken = pc.or_(taken, hit)
        result = _branch_value(otherwise, batch, pc.invert(taken), dtype)
        for hit, value in reversed(chosen):
            if isinstance(hit, pa.Scalar) and not hit.as_py():
                continue
            result = pc.if_else(hit, _branch_value(value, batch, hit, dtype), result)
        return result

    return case


@register("coalesce", strict=False)
def _coalesce(call: Call, args: list[Node]) -> Run:
    live = [a for a in args if not a.is_null_constant]
    if not live:
        null = typed_null(call.dtype)
        return lambda batch: null
    runs = [a.run for a in live]
    dtype = call.dtype
    return lambda batch: pc.coalesce(*(conform(r(batch), dtype) for r in runs))


@register("nullif", strict=False)
def _nullif(call: Call, args: list[Node]) -> Run:
    value, other = args
    if value.is_null_constant:
        null = typed_null(call.dtype)
        return lambda batch: null
    if other.is_null_constant:
        return value.run
    a, b = comparison_operands(args)
    null = typed_null(call.dtype)

    def nullif(batch: pa.RecordBatch) -> Datum:
        x = a.run(batch)
        same = pc.fill_null(pc.equal(x, b.run(batch)), False)
        return pc.if_else(same, null, conform(x, call.dtype))
    return nullif


def _extreme(kernel: object) -> object:
    def build(call: Call, args: list[Node]) -> Run:
        live = [a for a in args if not a.is_null_constant]
        dtype = call.dtype
        if not live:
            null = typed_null(dtype)
            return lambda batch: null
        runs = [a.run for a in live]
        return lambda batch: kernel(*(conform(r(batch), dtype) for r in runs),  # type: ignore[operator]
                                    skip_nulls=True)
    return build


register("greatest", strict=False)(_extreme(pc.max_element_wise))  # type: ignore[arg-type]
register("least", strict=False)(_extreme(pc.min_element_wise))  # type: ignore[arg-type]
