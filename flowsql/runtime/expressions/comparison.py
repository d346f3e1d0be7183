"""= <> < <= > >= and IS [NOT] DISTINCT FROM.

The binder casts both sides to their common type, so these are single kernel calls; a
column compared with a literal passes the literal as an Arrow scalar, which is the fast path
pyarrow has for it (no broadcast array is built). Operands that still differ (two decimal
scales, string views) are aligned here rather than trusted to implicit kernel casts.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from flowsql.planner import types as T
from flowsql.planner.expressions import Call
from flowsql.runtime.expressions.registry import Datum, Node, Run, register

_KERNELS = {"eq": pc.equal, "neq": pc.not_equal, "lt": pc.less, "lte": pc.less_equal,
            "gt": pc.greater, "gte": pc.greater_equal}


def aligned(a: Node, b: Node) -> tuple[pa.DataType | None, pa.DataType | None]:
    """Casts (left, right) needed so both sides have one type; None where none is needed."""
    if a.dtype.equals(b.dtype):
        return None, None
    common = T.common_type(a.dtype, b.dtype)
    if common is None:
        return None, None
    return (None if a.dtype.equals(common) else common,
            None if b.dtype.equals(common) else common)


def _operand(node: Node, cast_to: pa.DataType | None) -> Node:
    if cast_to is None:
        return node
    run = node.run
    if node.constant:
        value = node.scalar.cast(cast_to)
        return Node(lambda batch: value, cast_to, value)
    return Node(lambda batch: pc.cast(run(batch), cast_to), cast_to)


def comparison_operands(args: list[Node]) -> tuple[Node, Node]:
    ca, cb = aligned(args[0], args[1])
    return _operand(args[0], ca), _operand(args[1], cb)


def _comparison(name: str) -> None:
    kernel = _KERNELS[name]

    @register(name)
    def build(call: Call, args: list[Node]) -> Run:
        a, b = comparison_operands(args)
        ra, rb = a.run, b.run
        return lambda batch: kernel(ra(batch), rb(batch))


for _name in _KERNELS:
    _comparison(_name)


def _distinct(a: Datum, b: Datum) -> Datum:
    a_null, b_null = pc.is_null(a), pc.is_null(b)
    differs = pc.fill_null(pc.not_equal(a, b), False)
    return pc.if_else(pc.or_(a_null, b_null), pc.xor(a_null, b_null), differs)


@register("is_distinct_from", strict=False)
def _is_distinct_from(call: Call, args: list[Node]) -> Run:
    a, b = comparison_operands(args)
    if a.is_null_constant or b.is_null_constant:
        other = b if a.is_null_constant else a
        return lambda batch: pc.is_valid(other.run(batch))
    return lambda batch: _distinct(a.run(batch), b.run(batch))


@register("is_not_distinct_from", strict=False)
def _is_not_distinct_from(call: Call, args: list[Node]) -> Run:
    a, b = comparison_operands(args)
    if a.is_null_constant or b.is_null_constant:
        other = b if a.is_null_constant else a
        return lambda batch: pc.is_null(other.run(batch))
    return lambda batch: pc.invert(_distinct(a.run(batch), b.run(batch)))
