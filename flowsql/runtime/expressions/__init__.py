"""Vectorized evaluation of bound expressions over Arrow record batches.

Public interface (operators and the optimizer code against exactly this):

* :func:`compile_expr` -- compile once, then call per batch; the result is an array of
  ``batch.num_rows`` values of exactly ``expr.dtype``.
* :func:`compile_exprs` -- several expressions over the same batches at once: a
  deterministic sub-expression they repeat is evaluated once per batch
  (``shared_subexpressions``).
* :func:`compile_predicate` -- the same for WHERE-style predicates: a boolean mask without
  NULLs (NULL counts as false), ready for ``batch.filter``.
* :func:`evaluate_constant` -- the Python value of a column-free expression, with the same
  semantics, for constant folding.

Semantics follow DuckDB (the project's oracle): three-valued logic, exact decimals, checked
integer overflow, ``/`` in double precision; Flink's where the streaming mode's promise of
Flink results requires it (a fraction cast to an integer truncates) and for Flink's own
built-in functions (TIMESTAMPDIFF, DATE_FORMAT, SPLIT_INDEX, JSON_VALUE, ...). Kernels live in one module per function
family and register themselves by canonical name (``registry.KERNELS``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.planner.expressions import Expr, conjuncts
from flowsql.planner.nesting import deep_nesting, too_deep_message
from flowsql.planner.schema import Schema
from flowsql.runtime.expressions.compiler import compile_node
from flowsql.runtime.expressions.conjunction import (
    needs_ordered_evaluation,
    ordered_conjunction,
)
from flowsql.runtime.expressions.shared_subexpressions import SharedSubexpressions
from flowsql.runtime.expressions.support import as_array, conform

__all__ = ["compile_expr", "compile_exprs", "compile_predicate", "evaluate_constant"]


def compile_expr(expr: Expr, schema: Schema) -> Callable[[pa.RecordBatch], pa.Array]:
    """Compile ``expr`` over batches whose column ``i`` is ``schema[i]``; a deterministic
    sub-expression it repeats (Q19's ``CAST(l_quantity AS DECIMAL(21, 2))``) is computed
    once per batch."""
    positions = {f.cid: i for i, f in enumerate(schema)}
    shared = SharedSubexpressions([expr])
    with deep_nesting(lambda: ExecutionError(too_deep_message("compile"))):
        node = compile_node(expr, positions, shared if shared.any else None)
    dtype = expr.dtype
    run = node.run

    def evaluate(batch: pa.RecordBatch) -> pa.Array:
        return as_array(conform(run(batch), dtype), batch.num_rows)

    if shared.any:
        def evaluate_once(batch: pa.RecordBatch) -> pa.Array:
            try:
                return as_array(conform(run(batch), dtype), batch.num_rows)
            finally:
                shared.release()

        evaluate = evaluate_once

    if _depth(expr) <= _SHALLOW:
        return evaluate

    def evaluate_deep(batch: pa.RecordBatch) -> pa.Array:
        # Evaluation recurses once per level (see ``flowsql.planner.nesting``).
        with deep_nesting(lambda: ExecutionError(too_deep_message("evaluate"))):
            return evaluate(batch)

    return evaluate_deep


def compile_exprs(exprs: Sequence[Expr], schema: Schema
                  ) -> Callable[[pa.RecordBatch], list[pa.Array]]:
    """Compile ``exprs`` over batches whose column ``i`` is ``schema[i]``; the result maps a
    batch to one array per expression, as :func:`compile_expr` of each would, but computes
    a deterministic sub-expression occurring more than once only once per batch."""
    shared = SharedSubexpressions(exprs)
    if not shared.any:
        singles = [compile_expr(e, schema) for e in exprs]
        return lambda batch: [evaluate(batch) for evaluate in singles]
    positions = {f.cid: i for i, f in enumerate(schema)}
    with deep_nesting(lambda: ExecutionError(too_deep_message("compile"))):
        nodes = [(compile_node(e, positions, shared).run, e.dtype) for e in exprs]
    deep = any(_depth(e) > _SHALLOW for e in exprs)

    def evaluate_all(batch: pa.RecordBatch) -> list[pa.Array]:
        try:
            return [as_array(conform(run(batch), dtype), batch.num_rows)
                    for run, dtype in nodes]
        finally:
            shared.release()

    if not deep:
        return evaluate_all

    def evaluate_all_deep(batch: pa.RecordBatch) -> list[pa.Array]:
        with deep_nesting(lambda: ExecutionError(too_deep_message("evaluate"))):
            return evaluate_all(batch)

    return evaluate_all_deep


#: nesting depth below which evaluation fits Python's default recursion limit with room
_SHALLOW = 100


def _depth(expr: Expr) -> int:
    """Nesting depth of ``expr``, without recursion (the tree may be deeper than the
    recursion limit allows)."""
    deepest, stack = 0, [(expr, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in node.children())
    return deepest


def compile_predicate(expr: Expr, schema: Schema) -> Callable[[pa.RecordBatch], pa.Array]:
    """Compile a boolean ``expr`` into a NULL-free mask (WHERE semantics). A conjunction
    that calls a user-defined function after its first conjunct is evaluated in order,
    each conjunct on the rows the earlier ones kept (``conjunction``)."""
    if needs_ordered_evaluation(expr):
        parts = conjuncts(expr)
        return ordered_conjunction(parts, [compile_predicate(p, schema) for p in parts])
    evaluate = compile_expr(expr, schema)

    def mask(batch: pa.RecordBatch) -> pa.Array:
        result = evaluate(batch)
        if not pa.types.is_boolean(result.type):
            result = pc.cast(result, pa.bool_())
        return pc.fill_null(result, False) if result.null_count else result

    return mask


def evaluate_constant(expr: Expr) -> Any:
    """The value of an expression without column references (PlanError if it has some)."""
    node = compile_node(expr, {})
    if node.value is not None:
        return node.value.as_py()
    batch = pa.record_batch([pa.array([None], pa.null())], names=["_"])
    return as_array(conform(node.run(batch), expr.dtype), 1)[0].as_py()
