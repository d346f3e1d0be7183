"""GROUP BY ROLLUP / CUBE / GROUPING SETS: which grouping sets a GROUP BY clause means, and
the plan that computes them.

A GROUP BY item contributes alternatives (a plain expression one, ``ROLLUP(a, b)`` the
prefixes ``(a, b) (a) ()``, ``CUBE(a, b)`` every subset, ``GROUPING SETS (..)`` its listed
sets, which may nest ROLLUP and CUBE); the clause's grouping sets are the cross product of
its items' alternatives, duplicates kept (SQL's rule: Flink, Spark and DuckDB agree).

A GROUP BY with grouping sets computes the UNION ALL of one aggregate per grouping set,
each with NULL in the group columns its set leaves out. ``GROUPING(e, ..)`` and
``GROUPING_ID(e, ..)`` are one bit per argument, the first argument most significant, set
when the argument is left out of the row's grouping set: a constant of each branch.

Every branch reads an input of its own (the binder binds FROM and WHERE once per branch,
with fresh column ids) so the plan stays a tree whose column ids are unique. Over a window
TVF, grouped by window_start and window_end in every set, each branch is a window
aggregate over the same windows, which gives the rows of Flink's window aggregate with
grouping sets (insert-only, late rows dropped alike).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import pyarrow as pa

from flowsql.planner import types as T
from flowsql.planner.expressions import AggCall, Expr, Literal
from flowsql.planner.logical import Aggregate, LogicalPlan, Project, SetOp
from flowsql.planner.schema import Field

#: one alternative of a GROUP BY item: positions in the list of group expressions
Alternative = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class GroupingCall(Expr):
    """``GROUPING(args)`` / ``GROUPING_ID(args)`` as bound, until the binder replaces it
    by the constant of each grouping set (it never reaches a plan)."""

    args: tuple[Expr, ...]
    dtype: pa.DataType = T.INT64

    def children(self) -> tuple[Expr, ...]:
        return self.args

    def with_children(self, children: tuple[Expr, ...]) -> Expr:
        return replace(self, args=tuple(children))


def rollup(elements: Sequence[Alternative]) -> list[Alternative]:
    """``ROLLUP(e1, .., en)``: the prefixes, longest first."""
    return [_joined(elements[:n]) for n in range(len(elements), -1, -1)]


def cube(elements: Sequence[Alternative]) -> list[Alternative]:
    """``CUBE(e1, .., en)``: every subset, the full set first."""
    return [_joined([e for e, keep in zip(elements, mask) if keep])
            for mask in itertools.product((True, False), repeat=len(elements))]


def cross(items: Sequence[Sequence[Alternative]]) -> list[Alternative]:
    """The grouping sets of a GROUP BY whose items have the given alternatives."""
    return [_joined(choice) for choice in itertools.product(*items)]


def _joined(parts: Sequence[Alternative]) -> Alternative:
    seen: dict[int, None] = {}
    for part in parts:
        seen.update(dict.fromkeys(part))
    return tuple(seen)


def grouping_value(call: GroupingCall, group_exprs: Sequence[Expr],
                   grouping_set: Alternative) -> int:
    """The value of ``call`` in the rows of ``grouping_set``; its arguments are group
    expressions (the binder checked)."""
    value = 0
    for arg in call.args:
        value = value * 2 + (group_exprs.index(arg) not in grouping_set)
    return value


#: binds FROM and WHERE again for branch ``i`` (> 0): the input and a function mapping
#: expressions over the first binding's columns to the new binding's
Rebind = Callable[[], tuple[LogicalPlan, Callable[[Expr], Expr]]]


def union_of_grouping_sets(input: LogicalPlan, rebind: Rebind,
                           sets: Sequence[Alternative], group_exprs: Sequence[Expr],
                           group_fields: Sequence[Field], aggs: Sequence[AggCall],
                           agg_fields: Sequence[Field],
                           groupings: Sequence[tuple[GroupingCall, Field]]) -> LogicalPlan:
    """The UNION ALL of one aggregate per grouping set; output: ``group_fields``,
    ``agg_fields``, then one field per GROUPING call (see the module docstring)."""
    branches: list[LogicalPlan] = []
    for number, grouping_set in enumerate(sets):
        source, remap = (input, _same) if number == 0 else rebind()
        keys = [remap(group_exprs[i]) for i in grouping_set]
        key_fields = [Field.fresh(group_fields[i].name, group_fields[i].dtype)
                      for i in grouping_set]
        calls = tuple(remap(a) for a in aggs)
        call_fields = tuple(Field.fresh(f.name, f.dtype) for f in agg_fields)
        aggregate = Aggregate(source, tuple(keys), tuple(key_fields),
                              calls, call_fields)  # type: ignore[arg-type]
        by_position = dict(zip(grouping_set, key_fields))
        exprs: list[Expr] = [by_position[i].ref() if i in by_position
                             else Literal(None, f.dtype) for i, f in enumerate(group_fields)]
        exprs += [f.ref() for f in call_fields]
        exprs += [Literal(grouping_value(call, group_exprs, grouping_set), field.dtype)
                  for call, field in groupings]
        names = [*group_fields, *agg_fields, *(field for _, field in groupings)]
        branches.append(Project(aggregate, tuple(exprs),
                                tuple(Field.fresh(f.name, f.dtype) for f in names)))
    output = (*(f.as_nullable() for f in group_fields), *agg_fields,
              *(field for _, field in groupings))
    plan = branches[0]
    for number, branch in enumerate(branches[1:], start=2):
        fields = output if number == len(branches) else tuple(
            Field.fresh(f.name, f.dtype) for f in output)
        plan = SetOp(plan, branch, "union", True, fields)
    if len(branches) == 1:
        plan = Project(plan, tuple(f.ref() for f in plan.schema), output)
    return plan


def _same(expr: Expr) -> Expr:
    return expr
