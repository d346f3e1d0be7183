"""Logical plan -> physical plan: choose an algorithm per node and attach row estimates.

* Joins: equality conjuncts between an expression over the left input and one over the
  right become hash keys (both sides cast to their common type when they differ); the rest
  is the residual. Without keys, a nested-loop join. The build side is the input with fewer
  estimated rows (the runtime builds either side for every join kind).
* ``Limit`` directly over ``Sort`` becomes a top-N.
* An Aggregate over a window TVF becomes a window aggregate where it can
  (``plan_window_aggregate``); a window TVF on its own assigns windows row by row.
* Every node carries ``est_rows`` from the cardinality estimator.

The plan must be decorrelated: a subquery expression left in it is a PlanError.
"""

from __future__ import annotations

from flowsql.errors import PlanError
from flowsql.optimizer.cardinality import CardinalityEstimator, equi_sides
from flowsql.optimizer.deep import subquery_exprs
from flowsql.optimizer.plan_window_aggregate import plan_window_aggregate
from flowsql.planner import types as T
from flowsql.planner.expressions import Cast, Expr, conjoin, conjuncts, render
from flowsql.planner.logical import (
    Aggregate,
    Filter,
    Join,
    Limit,
    LogicalPlan,
    Project,
    Scan,
    SetOp,
    Sort,
    SubqueryAlias,
    TableFunctionJoin,
    Values,
    Window,
    WindowTableFunction,
)
from flowsql.planner.physical import (
    FilterExec,
    HashAggregateExec,
    HashJoinExec,
    LimitExec,
    NestedLoopJoinExec,
    PhysicalPlan,
    ProjectExec,
    SetOpExec,
    SortExec,
    TableFunctionExec,
    TableScanExec,
    TopNExec,
    ValuesExec,
    WindowExec,
    WindowTableFunctionExec,
)


def to_physical(plan: LogicalPlan, settings: dict[str, str] | None = None,
                estimator: CardinalityEstimator | None = None) -> PhysicalPlan:
    """The physical plan of an optimized logical plan."""
    leftover = next(subquery_exprs(plan), None)
    if leftover is not None:
        raise PlanError(f"physical planning: subquery '{render(leftover)}' was not "
                        "decorrelated (is decorrelate_subqueries disabled?)")
    return _Planner(estimator or CardinalityEstimator(), settings or {}).plan(plan)


class _Planner:
    def __init__(self, estimator: CardinalityEstimator, settings: dict[str, str]) -> None:
        self.estimator = estimator
        self.settings = settings

    def plan(self, node: LogicalPlan) -> PhysicalPlan:
        rows = self.estimator.rows(node)
        if isinstance(node, Scan):
            return TableScanExec(node.table, node.fields, node.filters, rows)
        if isinstance(node, Values):
            return ValuesExec(node.fields, node.rows, rows)
        if isinstance(node, Filter):
            return FilterExec(self.plan(node.input), node.predicate, rows)
        if isinstance(node, Project):
            return ProjectExec(self.plan(node.input), node.exprs, node.fields, rows)
        if isinstance(node, Join):
            return self._join(node, rows)
        if isinstance(node, Aggregate):
            window = plan_window_aggregate(node, rows, self.settings, self.plan)
            if window is not None:
                return window
            return HashAggregateExec(self.plan(node.input), node.group_exprs,
                                     node.group_fields, node.aggs, node.agg_fields, rows)
        if isinstance(node, Window):
            return WindowExec(self.plan(node.input), node.calls, node.fields, rows)
        if isinstance(node, Sort):
            return SortExec(self.plan(node.input), node.keys, rows)
        if isinstance(node, Limit):
            return self._limit(node, rows)
        if isinstance(node, SetOp):
            return SetOpExec(self.plan(node.left), self.plan(node.right), node.kind, node.all,
                             node.fields, rows)
        if isinstance(node, SubqueryAlias):
            return self.plan(node.input)
        if isinstance(node, WindowTableFunction):
            return self._window_tvf(node, rows)
        if isinstance(node, TableFunctionJoin):
            return TableFunctionExec(self.plan(node.input), node.function, node.args,
                                     node.fields, node.outer, rows)
        raise PlanError(f"physical planning: no physical operator for {type(node).__name__}")

    def _window_tvf(self, node: WindowTableFunction, rows: float) -> PhysicalPlan:
        if node.shape.kind == "session":
            raise PlanError("SESSION windows are supported only under GROUP BY window_start, "
                            "window_end (a window aggregate)")
        return WindowTableFunctionExec(self.plan(node.input), node.shape, node.time_column,
                                       node.window_fields, rows)

    def _limit(self, node: Limit, rows: float) -> PhysicalPlan:
        if isinstance(node.input, Sort) and node.limit is not None:
            sort = node.input
            return TopNExec(self.plan(sort.input), sort.keys, node.limit, node.offset, rows)
        return LimitExec(self.plan(node.input), node.limit, node.offset, rows)

    def _join(self, node: Join, rows: float) -> PhysicalPlan:
        left, right = self.plan(node.left), self.plan(node.right)
        left_keys, right_keys, rest = split_equi_keys(node)
        kind = "inner" if node.kind == "cross" else node.kind
        if node.lookup:
            if not left_keys:
                raise PlanError("FOR SYSTEM_TIME AS OF: a lookup join needs an equality "
                                "between a column of the left input and one of the looked-up "
                                "table in its ON clause")
            # the looked-up table is the build side (the one a lookup indexes)
            return HashJoinExec(left, right, kind, tuple(left_keys), tuple(right_keys),
                                conjoin(rest), "right", rows, lookup=True)
        if not left_keys:
            return NestedLoopJoinExec(left, right, kind, node.condition, rows, node.mark,
                                      node.null_aware)
        build = "left" if left.est_rows < right.est_rows else "right"
        return HashJoinExec(left, right, kind, tuple(left_keys), tuple(right_keys),
                            conjoin(rest), build, rows, node.mark, node.null_aware)


def split_equi_keys(join: Join) -> tuple[list[Expr], list[Expr], list[Expr]]:
    """(left keys, right keys, residual conjuncts) of a join condition."""
    left_ids, right_ids = join.left.column_ids, join.right.column_ids
    left_keys: list[Expr] = []
    right_keys: list[Expr] = []
    rest: list[Expr] = []
    for c in conjuncts(join.condition):
        sides = equi_sides(c, left_ids, right_ids)
        if sides is None:
            rest.append(c)
            continue
        a, b = sides
        if not a.dtype.equals(b.dtype):
            common = T.common_type(a.dtype, b.dtype)
            if common is None:
                rest.append(c)
                continue
            a = a if a.dtype.equals(common) else Cast(a, common)
            b = b if b.dtype.equals(common) else Cast(b, common)
        left_keys.append(a)
        right_keys.append(b)
    return left_keys, right_keys, rest
