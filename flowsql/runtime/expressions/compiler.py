"""Expression tree -> tree of compiled :class:`Node` closures.

Column references resolve to batch positions here, at compile time, so evaluation never
looks names up. Sub-expressions without columns are evaluated once at compile time
(constant folding); if that evaluation fails the node is left to fail at run time instead,
because a branch the data never reaches (a CASE arm) must not fail the query.

Kernel errors surface as :class:`ExecutionError` naming the sub-expression that failed.
"""

from __future__ import annotations

import pyarrow as pa

from flowsql.errors import ExecutionError, FlowSQLError, PlanError
from flowsql.planner.expressions import (
    AggCall,
    Call,
    Case,
    Cast,
    ColumnRef,
    Expr,
    Literal,
    UdfCall,
    WindowCall,
    render,
)
from flowsql.runtime.expressions import (  # noqa: F401  (importing registers the kernels)
    arithmetic,
    comparison,
    date_format,
    encoding,
    json_path,
    logic,
    numeric,
    string_functions,
    strings,
    temporal,
    temporal_units,
    time_zone,
)
from flowsql.runtime.expressions.casts import build_cast
from flowsql.runtime.expressions.conditional import build_case
from flowsql.runtime.expressions.registry import KERNELS, Node, Run, constant_node
from flowsql.runtime.expressions.shared_subexpressions import SharedSubexpressions
from flowsql.runtime.expressions.support import conform, typed_null
from flowsql.runtime.expressions.user_function_call import compile_udf_call

#: A one-row batch without columns: what constant sub-expressions are evaluated against.
_UNIT_BATCH = pa.record_batch([pa.array([None], pa.null())], names=["_"])


def literal_scalar(expr: Literal) -> pa.Scalar:
    value = expr.value
    if value is None:
        return typed_null(expr.dtype)
    if pa.types.is_interval(expr.dtype) and isinstance(value, tuple | list):
        value = pa.MonthDayNano(list(value))
    try:
        return pa.scalar(value, type=expr.dtype)
    except (pa.ArrowException, TypeError, ValueError) as e:
        raise PlanError(f"literal {render(expr)} does not fit its type {expr.dtype}: {e}") \
            from None


def compile_node(expr: Expr, positions: dict[int, int],
                 shared: SharedSubexpressions | None = None) -> Node:
    """``expr`` compiled over batches whose column ``positions[cid]`` holds column ``cid``;
    a sub-expression ``shared`` knows as repeated compiles once and is evaluated once per
    batch."""
    key = shared.key_of(expr) if shared is not None else None
    if key is None:
        return _compile(expr, positions, shared)
    assert shared is not None
    node = shared.node(key)
    if node is None:
        node = shared.share(key, _compile(expr, positions, shared))
    return node


def _compile(expr: Expr, positions: dict[int, int], shared: SharedSubexpressions | None
             ) -> Node:
    if isinstance(expr, ColumnRef):
        index = positions.get(expr.cid)
        if index is None:
            raise PlanError(f"column '{expr.name}' (#{expr.cid}) is not in the input of the "
                            "expression being compiled")
        dtype = expr.dtype
        return Node(lambda batch: batch.column(index), dtype)
    if isinstance(expr, Literal):
        return constant_node(literal_scalar(expr))
    if isinstance(expr, Cast):
        arg = compile_node(expr.arg, positions, shared)
        return _finish(expr, build_cast(arg, expr.dtype), [arg])
    if isinstance(expr, Case):
        conditions = [compile_node(c, positions, shared) for c in expr.conditions]
        values = [compile_node(v, positions, shared) for v in expr.values]
        otherwise = compile_node(expr.otherwise, positions, shared)
        run = build_case(conditions, values, otherwise, expr.dtype)
        return _finish(expr, run, [*conditions, *values, otherwise])
    if isinstance(expr, Call):
        return _compile_call(expr, positions, shared)
    if isinstance(expr, UdfCall):
        return compile_udf_call(expr, [compile_node(a, positions, shared) for a in expr.args])
    if isinstance(expr, AggCall | WindowCall):
        raise PlanError(f"{render(expr)} must be computed by an aggregate or window operator, "
                        "not by the expression evaluator")
    raise PlanError(f"cannot evaluate {type(expr).__name__} {render(expr)}: subqueries must be "
                    "decorrelated before execution")


def _compile_call(call: Call, positions: dict[int, int], shared: SharedSubexpressions | None
                  ) -> Node:
    function = KERNELS.get(call.name)
    if function is None:
        raise PlanError(f"no runtime implementation of function '{call.name}'")
    args = [compile_node(a, positions, shared) for a in call.args]
    if function.strict and any(a.is_null_constant for a in args):
        return constant_node(typed_null(call.dtype))
    return _finish(call, function.build(call, args), args)


def _finish(expr: Expr, run: Run, args: list[Node]) -> Node:
    """Guard ``run`` with error translation and the cast to the planner's type; fold it when
    every argument is constant."""
    dtype = expr.dtype

    def guarded(batch: pa.RecordBatch) -> pa.Array | pa.Scalar:
        try:
            return conform(run(batch), dtype)
        except FlowSQLError:
            raise
        except (pa.ArrowException, ArithmeticError, OverflowError, ValueError) as e:
            raise ExecutionError(f"cannot evaluate {render(expr)}: {_clean(e)}") from None

    node = Node(guarded, dtype)
    # A call without arguments (PROCTIME) reads the clock: it is evaluated per batch.
    if args and all(a.constant for a in args):
        try:
            value = guarded(_UNIT_BATCH)
        except FlowSQLError:
            return node
        if not isinstance(value, pa.Scalar):
            value = value[0]
        return constant_node(value)
    return node


def _clean(error: Exception) -> str:
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return text[0].lower() + text[1:] if text else text
