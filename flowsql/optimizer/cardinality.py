"""Row-count estimates for logical plans.

The estimator knows no costs (ENGINEERING.md habit 6): it answers "how many rows" and "how
many distinct values at most" and nothing else. Without column statistics it uses textbook
defaults: equality with a constant 0.1 (or 1/domain when the domain is small), ranges 1/3,
LIKE 1/4, IS NULL 0.1, and unknown predicates 1/2.

Join estimate: ``|L| * |R| / min(domain(a), domain(b))`` for the most selective equi-key
``a = b``, where the domain of a column is the row count of the table it comes from, or the
table's distinct-value bound for that column when the statistics have one (a nation key
has at most 25 values however large the customer table). For a
foreign-key join this gives the many side's rows scaled by the fraction of the key side that
survived its filters, which is what makes filtered dimension tables join first.

Estimates are memoised per plan node; the memo holds the nodes themselves so an id is never
reused while the estimator lives.
"""

from __future__ import annotations

import math

from flowsql.planner.expressions import Call, ColumnRef, Expr, Literal, column_ids, conjuncts
from flowsql.planner.logical import (
    Aggregate,
    Filter,
    Join,
    Limit,
    LogicalPlan,
    Project,
    Scan,
    SetOp,
    TableFunctionJoin,
    Values,
)
from flowsql.planner.udf import DEFAULT_ROWS_PER_CALL

DEFAULT_TABLE_ROWS = 1000.0
EQ_SELECTIVITY = 0.1
RANGE_SELECTIVITY = 1 / 3
LIKE_SELECTIVITY = 0.25
NULL_SELECTIVITY = 0.1
UNKNOWN_SELECTIVITY = 0.5
ANTI_MIN_FRACTION = 0.1

_RANGE = ("lt", "lte", "gt", "gte")
_PATTERN = ("like", "ilike", "contains", "starts_with", "ends_with", "regexp_matches")


class CardinalityEstimator:
    """Estimates rows and column domains of logical plans (memoised by node identity)."""

    def __init__(self) -> None:
        self._rows: dict[int, tuple[LogicalPlan, float]] = {}

    # -- rows ------------------------------------------------------------------------
    def rows(self, plan: LogicalPlan) -> float:
        hit = self._rows.get(id(plan))
        if hit is not None and hit[0] is plan:
            return hit[1]
        value = max(self._estimate(plan), 0.0)
        self._rows[id(plan)] = (plan, value)
        return value

    def _estimate(self, plan: LogicalPlan) -> float:
        if isinstance(plan, Scan):
            rows = table_rows(plan)
            return rows * self._all_selectivity(plan.filters, plan)
        if isinstance(plan, Values):
            return float(len(plan.rows))
        if isinstance(plan, Filter):
            return self.rows(plan.input) * self.selectivity(plan.predicate, plan.input)
        if isinstance(plan, Join):
            return self._join_rows(plan)
        if isinstance(plan, Aggregate):
            return self._aggregate_rows(plan)
        if isinstance(plan, Limit):
            rows = max(self.rows(plan.input) - plan.offset, 0.0)
            return rows if plan.limit is None else min(rows, float(plan.limit))
        if isinstance(plan, TableFunctionJoin):
            # the function's rows_per_call hint (rows per input row), else the default
            per_row = plan.function.hints.rows_per_call
            rows = self.rows(plan.input) * (DEFAULT_ROWS_PER_CALL if per_row is None
                                            else per_row)
            return max(rows, self.rows(plan.input)) if plan.outer else rows
        if isinstance(plan, SetOp):
            left, right = self.rows(plan.left), self.rows(plan.right)
            return {"union": left + right, "intersect": min(left, right)}.get(plan.kind, left)
        inputs = plan.inputs
        return self.rows(inputs[0]) if inputs else 1.0

    def _aggregate_rows(self, plan: Aggregate) -> float:
        if not plan.group_exprs:
            return 1.0
        rows_in = self.rows(plan.input)
        groups = 1.0
        for g in plan.group_exprs:
            groups *= self._expr_domain(plan.input, g)
            if groups >= rows_in:
                return rows_in
        return max(min(groups, rows_in), 1.0)

    def _join_rows(self, join: Join) -> float:
        left, right = self.rows(join.left), self.rows(join.right)
        matched = self.inner_join_rows(join.left, join.right, join.condition)
        kind = join.kind
        if kind in ("inner", "cross"):
            return matched
        if kind == "left":
            return max(left, matched)
        if kind == "right":
            return max(right, matched)
        if kind == "full":
            return max(left, right, matched)
        if kind == "semi":
            return min(left, matched)
        if kind == "anti":
            return max(left - min(left, matched), left * ANTI_MIN_FRACTION)
        return left  # mark and single keep every left row once

    def inner_join_rows(self, left: LogicalPlan, right: LogicalPlan,
                        condition: Expr | None) -> float:
        """Rows of ``left JOIN right ON condition`` as an inner join."""
        rows = self.rows(left) * self.rows(right)
        left_ids, right_ids = left.column_ids, right.column_ids
        best_domain = 1.0
        rest: list[Expr] = []
        for c in conjuncts(condition):
            sides = equi_sides(c, left_ids, right_ids)
            if sides is None:
                rest.append(c)
                continue
            domain = min(self._expr_domain(left, sides[0]), self._expr_domain(right, sides[1]))
            best_domain = max(best_domain, domain)
        rows /= best_domain
        for c in rest:
            rows *= self._selectivity(c, None)
        return rows

    # -- domains -----------------------------------------------------------------------
    def domain(self, plan: LogicalPlan, cid: int) -> float:
        """An upper bound of the distinct values of column ``cid`` of ``plan``: the row count
        of the table (or aggregate) that produced it."""
        if isinstance(plan, Scan):
            bounds = plan.table.statistics.distinct_bounds
            name = next((f.name for f in plan.fields if f.cid == cid), None)
            if name is not None and name in bounds:
                return float(max(min(bounds[name], table_rows(plan)), 1))
            return table_rows(plan)
        if isinstance(plan, Project):
            for e, f in zip(plan.exprs, plan.fields):
                if f.cid == cid:
                    return self._expr_domain(plan.input, e)
        if isinstance(plan, Aggregate):
            for e, f in zip(plan.group_exprs, plan.group_fields):
                if f.cid == cid:
                    return min(self._expr_domain(plan.input, e), self.rows(plan))
            return self.rows(plan)
        if isinstance(plan, Join) and plan.mark is not None and plan.mark.cid == cid:
            return 2.0
        for child in plan.inputs:
            if cid in child.column_ids:
                return self.domain(child, cid)
        return max(self.rows(plan), 1.0)

    def _expr_domain(self, plan: LogicalPlan, e: Expr) -> float:
        if isinstance(e, ColumnRef) and e.cid in plan.column_ids:
            return max(self.domain(plan, e.cid), 1.0)
        if isinstance(e, Literal):
            return 1.0
        return max(self.rows(plan), 1.0)

    # -- selectivity -------------------------------------------------------------------
    def selectivity(self, predicate: Expr, plan: LogicalPlan) -> float:
        """Fraction of ``plan``'s rows for which ``predicate`` is true."""
        return self._selectivity(predicate, plan)

    def _all_selectivity(self, preds: tuple[Expr, ...], plan: LogicalPlan | None) -> float:
        return math.prod(self._selectivity(p, plan) for p in preds)

    def _selectivity(self, e: Expr, plan: LogicalPlan | None) -> float:
        if isinstance(e, Literal):
            return 1.0 if e.value is True else 0.0
        if not isinstance(e, Call):
            return UNKNOWN_SELECTIVITY
        name = e.name
        if name == "and":
            return self._all_selectivity(e.args, plan)
        if name == "or":
            return 1.0 - math.prod(1.0 - self._selectivity(a, plan) for a in e.args)
        if name == "not":
            return 1.0 - self._selectivity(e.args[0], plan)
        if name == "eq":
            return self._eq_selectivity(e.args[0], e.args[1], plan)
        if name == "neq":
            return 1.0 - self._eq_selectivity(e.args[0], e.args[1], plan)
        if name == "in_list":
            one = self._eq_selectivity(e.args[0], e.args[1], plan)
            return min(1.0, one * (len(e.args) - 1))
        if name in _RANGE:
            return RANGE_SELECTIVITY
        if name in _PATTERN:
            return LIKE_SELECTIVITY
        if name == "is_null":
            return NULL_SELECTIVITY
        if name == "is_not_null":
            return 1.0 - NULL_SELECTIVITY
        return UNKNOWN_SELECTIVITY

    def _eq_selectivity(self, a: Expr, b: Expr, plan: LogicalPlan | None) -> float:
        column = a if isinstance(a, ColumnRef) else b if isinstance(b, ColumnRef) else None
        other = b if column is a else a
        if plan is None or column is None or column_ids(other):
            return EQ_SELECTIVITY
        return max(EQ_SELECTIVITY, 1.0 / self._expr_domain(plan, column))


def table_rows(scan: Scan) -> float:
    count = scan.table.statistics.row_count
    return float(count) if count is not None else DEFAULT_TABLE_ROWS


def equi_sides(c: Expr, left_ids: set[int], right_ids: set[int]) -> tuple[Expr, Expr] | None:
    """``(left_expr, right_expr)`` when ``c`` is an equality between an expression over only
    left columns and one over only right columns (either order), else None."""
    if not (isinstance(c, Call) and c.name == "eq"):
        return None
    a, b = c.args
    ca, cb = column_ids(a), column_ids(b)
    if ca and cb and ca <= left_ids and cb <= right_ids:
        return a, b
    if ca and cb and cb <= left_ids and ca <= right_ids:
        return b, a
    return None
