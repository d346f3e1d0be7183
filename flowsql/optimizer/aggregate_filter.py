"""Fold an aggregate's ``FILTER (WHERE p)`` into its argument, for the streaming aggregates.

``agg(x) FILTER (WHERE p)`` sees only the rows where ``p`` is true. Every aggregate the
streaming operators compute ignores NULL arguments, so the same result comes from
``agg(CASE WHEN p THEN x END)``: a row where ``p`` is false or NULL contributes a NULL, which
the aggregate skips. ``COUNT(*) FILTER (WHERE p)`` becomes ``COUNT(CASE WHEN p THEN TRUE END)``.
This holds for DISTINCT too (NULL is never a distinct value) and for every aggregate state
(changelog, window slices, sessions), so the operators need no filter of their own.
"""

from __future__ import annotations

from dataclasses import replace

from flowsql.planner.expressions import TRUE, AggCall, Case, Expr, lit

__all__ = ["filter_into_arguments"]


def _only_when(predicate: Expr, value: Expr) -> Expr:
    return Case((predicate,), (value,), lit(None, value.dtype), value.dtype)


def filter_into_arguments(agg: AggCall) -> AggCall:
    """``agg`` without a filter, computing the same value (see the module docstring)."""
    if agg.filter is None:
        return agg
    if agg.name == "count_star":
        return replace(agg, name="count", args=(_only_when(agg.filter, TRUE),), filter=None)
    return replace(agg, args=tuple(_only_when(agg.filter, a) for a in agg.args), filter=None)
