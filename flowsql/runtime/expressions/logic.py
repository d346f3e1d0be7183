"""AND, OR, NOT, IS [NOT] NULL, IS TRUE / IS FALSE and IN (list) with SQL's three-valued
logic: FALSE AND NULL is FALSE, TRUE OR NULL is TRUE, and ``x IN (1, NULL)`` is NULL when
``x`` matches no value (Kleene kernels give exactly this).

IN with literal values -- the common case -- is one hash lookup (``pc.is_in`` against a
value set built at compile time) instead of a chain of equalities.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc

from flowsql.planner.expressions import Call
from flowsql.runtime.expressions.comparison import comparison_operands
from flowsql.runtime.expressions.registry import Datum, Node, Run, register
from flowsql.runtime.expressions.support import typed_null

_NULL_BOOL = typed_null(pa.bool_())


def _fold(kernel: Callable[[Datum, Datum], Datum], nodes: list[Node]) -> Run:
    runs = [n.run for n in nodes]
    return lambda batch: functools.reduce(kernel, (r(batch) for r in runs))


@register("and", strict=False)
def _and(call: Call, args: list[Node]) -> Run:
    if any(a.constant and a.python_value is False for a in args):
        false = pa.scalar(False)
        return lambda batch: false
    live = [a for a in args if not (a.constant and a.python_value is not None)]
    if not live:
        true = pa.scalar(True)
        return lambda batch: true
    return _fold(pc.and_kleene, live)


@register("or", strict=False)
def _or(call: Call, args: list[Node]) -> Run:
    if any(a.constant and a.python_value is True for a in args):
        true = pa.scalar(True)
        return lambda batch: true
    live = [a for a in args if not (a.constant and a.python_value is not None)]
    if not live:
        false = pa.scalar(False)
        return lambda batch: false
    return _fold(pc.or_kleene, live)


@register("not")
def _not(call: Call, args: list[Node]) -> Run:
    run = args[0].run
    return lambda batch: pc.invert(run(batch))


@register("is_null", strict=False)
def _is_null(call: Call, args: list[Node]) -> Run:
    run = args[0].run
    return lambda batch: pc.is_null(run(batch))


@register("is_not_null", strict=False)
def _is_not_null(call: Call, args: list[Node]) -> Run:
    run = args[0].run
    return lambda batch: pc.is_valid(run(batch))


@register("is_true", strict=False)
def _is_true(call: Call, args: list[Node]) -> Run:
    run = args[0].run
    return lambda batch: pc.fill_null(run(batch), False)


@register("is_false", strict=False)
def _is_false(call: Call, args: list[Node]) -> Run:
    run = args[0].run
    return lambda batch: pc.fill_null(pc.invert(run(batch)), False)


@register("in_list", strict=False)
def _in_list(call: Call, args: list[Node]) -> Run:
    needle, candidates = args[0], args[1:]
    if needle.is_null_constant:
        return lambda batch: _NULL_BOOL
    if all(c.constant for c in candidates):
        return _in_value_set(needle, candidates)
    pairs = [comparison_operands([needle, c]) for c in candidates]

    def chained(batch: pa.RecordBatch) -> Datum:
        return functools.reduce(pc.or_kleene, (pc.equal(a.run(batch), b.run(batch))
                                               for a, b in pairs))
    return chained


def _in_value_set(needle: Node, candidates: list[Node]) -> Run:
    has_null = any(c.is_null_constant for c in candidates)
    values = [c.scalar.cast(needle.dtype) for c in candidates if not c.is_null_constant]
    value_set = pa.array([v.as_py() for v in values], type=needle.dtype)
    run = needle.run

    def lookup(batch: pa.RecordBatch) -> Datum:
        x = run(batch)
        found = pc.is_in(x, value_set=value_set)
        if has_null:
            found = pc.or_kleene(found, _NULL_BOOL)
        if isinstance(x, pa.Scalar):
            return found if x.is_valid else _NULL_BOOL
        if x.null_count:
            found = pc.if_else(pc.is_valid(x), found, _NULL_BOOL)
        return found
    return lookup
