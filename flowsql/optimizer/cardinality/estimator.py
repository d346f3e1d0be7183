"""Row counts and distinct counts of logical plans.

The estimator knows no costs (ENGINEERING.md habit 6): it answers "how many rows" and "how
many distinct values" and nothing else. It walks a plan bottom-up, carrying per column a
:class:`ColumnEstimate` (``columns.py``) that starts from the table's statistics at a Scan
(measured column statistics, else the distinct bounds of file metadata, else the defaults
of ``defaults.py``) and follows the rows: filters (``selectivity.py``) and joins
(``joins.py``) shrink distinct counts with the rows they keep, a join key keeps at most the
smaller side's values, projections derive new columns, aggregates count groups
(``groups.py``) and give their values a distribution (``aggregate_values.py``).

Estimates are memoised per plan node; the memo holds the nodes themselves so an id is never
reused while the estimator lives.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import replace

import pyarrow as pa

from flowsql.optimizer.cardinality.aggregate_values import aggregate_normal
from flowsql.optimizer.cardinality.columns import (
    ColumnEstimate,
    derived_column,
    scan_column,
    shrink_distinct,
)
from flowsql.optimizer.cardinality.defaults import DEFAULT_TABLE_ROWS
from flowsql.optimizer.cardinality.groups import group_count
from flowsql.optimizer.cardinality.joins import (
    KeyPairs,
    contained_domain,
    join_rows,
    matched_distinct,
    pair_domain,
)
from flowsql.optimizer.cardinality.joins import inner_rows as _inner_rows
from flowsql.optimizer.cardinality.selectivity import Conjunction, Lookup, conjunction
from flowsql.planner.expressions import (
    AggCall,
    Call,
    Case,
    Cast,
    ColumnRef,
    Expr,
    Literal,
    column_ids,
    conjuncts,
)
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

_EPOCH = dt.date(1970, 1, 1)
#: aggregates whose results are values of their argument column
_VALUE_AGGREGATES = ("min", "max", "any_value", "first", "last")
_COUNTS = ("count", "count_star")


class CardinalityEstimator:
    """Estimates rows and per-column distinct counts of logical plans (memoised by node
    identity)."""

    def __init__(self) -> None:
        self._rows: dict[int, tuple[LogicalPlan, float]] = {}
        self._columns: dict[tuple[int, int], tuple[LogicalPlan, ColumnEstimate]] = {}
        self._filters: dict[int, tuple[LogicalPlan, Conjunction]] = {}
        self._joins: dict[int, tuple[LogicalPlan, _JoinParts]] = {}
        self._ids: dict[int, tuple[LogicalPlan, set[int]]] = {}

    # -- the interface -----------------------------------------------------------------
    def rows(self, plan: LogicalPlan) -> float:
        """Estimated output rows of ``plan``."""
        hit = self._rows.get(id(plan))
        if hit is not None and hit[0] is plan:
            return hit[1]
        value = max(self._estimate(plan), 0.0)
        self._rows[id(plan)] = (plan, value)
        return value

    def domain(self, plan: LogicalPlan, cid: int) -> float:
        """Estimated distinct values of column ``cid`` of ``plan`` (at least 1)."""
        return max(self.column(plan, cid).distinct, 1.0)

    def column(self, plan: LogicalPlan, cid: int) -> ColumnEstimate:
        """What is known about column ``cid`` of ``plan``'s output."""
        key = (id(plan), cid)
        hit = self._columns.get(key)
        if hit is not None and hit[0] is plan:
            return hit[1]
        if cid in self._column_ids(plan):
            value = self._column(plan, cid).capped(self.rows(plan))
        else:  # not a column of this plan: nothing known beyond the rows
            value = derived_column(pa.null(), self.rows(plan))
        self._columns[key] = (plan, value)
        return value

    def selectivity(self, predicate: Expr, plan: LogicalPlan) -> float:
        """Fraction of ``plan``'s rows for which ``predicate`` is true."""
        return conjunction([predicate], self._lookup(plan)).selectivity

    def inner_join_rows(self, left: LogicalPlan, right: LogicalPlan,
                        condition: Expr | None) -> float:
        """Rows of ``left JOIN right ON condition`` as an inner join."""
        parts = self._join_parts(left, right, condition)
        return _inner_rows(self.rows(left), self.rows(right), parts.pairs, parts.residual)

    # -- rows ----------------------------------------------------------------------------
    def _estimate(self, plan: LogicalPlan) -> float:
        if isinstance(plan, Scan):
            rows = table_rows(plan)
            return rows * self._filter(plan).selectivity if plan.filters else rows
        if isinstance(plan, Values):
            return float(len(plan.rows))
        if isinstance(plan, Filter):
            return self.rows(plan.input) * self._filter(plan).selectivity
        if isinstance(plan, Join):
            parts = self._parts(plan)
            return join_rows(plan.kind, self.rows(plan.left), self.rows(plan.right),
                             parts.pairs, parts.residual)
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
        keys = [self._expression(plan.input, g) for g in plan.group_exprs]
        return group_count(keys, self.rows(plan.input), self._links(plan.input))

    def _links(self, plan: LogicalPlan) -> list[tuple[ColumnEstimate, ColumnEstimate]]:
        """Column pairs equated by the equi-joins below ``plan`` (down to aggregates)."""
        out: list[tuple[ColumnEstimate, ColumnEstimate]] = []
        stack = [plan]
        while stack:
            node = stack.pop()
            if isinstance(node, Aggregate):
                continue
            if isinstance(node, Join) and node.kind in ("inner", "semi", "left", "right"):
                out.extend(self._parts(node).pairs)
            stack.extend(node.inputs)
        return out

    # -- joins ---------------------------------------------------------------------------
    def _parts(self, join: Join) -> _JoinParts:
        hit = self._joins.get(id(join))
        if hit is not None and hit[0] is join:
            return hit[1]
        parts = self._join_parts(join.left, join.right, join.condition)
        self._joins[id(join)] = (join, parts)
        return parts

    def _join_parts(self, left: LogicalPlan, right: LogicalPlan,
                    condition: Expr | None) -> _JoinParts:
        left_ids, right_ids = self._column_ids(left), self._column_ids(right)
        pairs: list[tuple[ColumnEstimate, ColumnEstimate]] = []
        keys: dict[int, tuple[float, float]] = {}
        seen: dict[int, int] = {}  # key column id -> index of its pair
        rest: list[Expr] = []
        for c in conjuncts(condition):
            sides = equi_sides(c, left_ids, right_ids)
            if sides is None:
                rest.append(c)
                continue
            a, b = self._expression(left, sides[0]), self._expression(right, sides[1])
            ids = [side.cid for side in sides if isinstance(side, ColumnRef)]
            same = next((seen[cid] for cid in ids if cid in seen), None)
            if same is None:
                pairs.append((a, b))
                seen.update((cid, len(pairs) - 1) for cid in ids)
            elif pair_domain(a, b) > pair_domain(*pairs[same]):
                # a = b and a = c (or c = b) are one key through their equivalence (as
                # transitive predicates produce it): the more selective pair stands for both
                pairs[same] = (a, b)
            matched = matched_distinct(a, b)
            domain = min(contained_domain(a, b), contained_domain(b, a))
            for side in sides:
                if isinstance(side, ColumnRef):
                    known = keys.get(side.cid, (math.inf, math.inf))
                    keys[side.cid] = (min(known[0], matched), min(known[1], domain))
        residual = 1.0
        if rest:
            lookup = self._lookup_either(left, right)
            residual = conjunction(rest, lookup).selectivity
        return _JoinParts(tuple(pairs), residual, keys)

    # -- columns -------------------------------------------------------------------------
    def _column(self, plan: LogicalPlan, cid: int) -> ColumnEstimate:
        if isinstance(plan, Scan):
            base = self._base_column(plan, cid)
            if not plan.filters:
                return base
            return self._filtered(base, self._filter(plan), cid, table_rows(plan),
                                  self.rows(plan))
        if isinstance(plan, Filter):
            return self._filtered(self.column(plan.input, cid), self._filter(plan), cid,
                                  self.rows(plan.input), self.rows(plan))
        if isinstance(plan, Project):
            for e, f in zip(plan.exprs, plan.fields):
                if f.cid == cid:
                    return self._expression(plan.input, e)
        if isinstance(plan, Aggregate):
            return self._aggregate_column(plan, cid)
        if isinstance(plan, Join):
            return self._join_column(plan, cid)
        for child in plan.inputs:
            if cid in self._column_ids(child):
                return self.column(child, cid)
        dtype = next((f.dtype for f in plan.schema if f.cid == cid), pa.null())
        return derived_column(dtype, self.rows(plan))

    def _base_column(self, scan: Scan, cid: int) -> ColumnEstimate:
        field = next(f for f in scan.fields if f.cid == cid)
        stats = scan.table.statistics
        return scan_column(field.dtype, table_rows(scan), stats.columns.get(field.name),
                           stats.distinct_bounds.get(field.name), (id(scan), field.name))

    def _filtered(self, column: ColumnEstimate, conj: Conjunction, cid: int,
                  rows_in: float, rows_out: float) -> ColumnEstimate:
        """The column after a filter: its own predicates cut its values in proportion, the
        other predicates thin the rows left (see ``columns.shrink_distinct``)."""
        own = conj.per_column.get(cid, 1.0)
        if own >= 1.0:
            own = 1.0
        distinct, domain = column.distinct * own, column.domain_size * own
        rows_left = rows_in * own
        rest = rows_out / rows_left if rows_left > 0 else 0.0
        distinct = shrink_distinct(distinct, rows_left, min(rest, 1.0))
        return replace(column, distinct=distinct, domain=domain)

    def _join_column(self, join: Join, cid: int) -> ColumnEstimate:
        if join.mark is not None and join.mark.cid == cid:
            return derived_column(join.mark.dtype, 2.0)
        parts = self._parts(join)
        from_left = cid in self._column_ids(join.left)
        side = join.left if from_left else join.right
        column = self.column(side, cid)
        side_rows, out = self.rows(side), self.rows(join)
        if join.kind in ("mark", "single") or (join.kind == "left" and from_left) or \
                (join.kind == "right" and not from_left) or join.kind == "full":
            return column  # a preserved side keeps every row and value
        if cid in parts.keys and join.kind != "anti":
            matched, domain = parts.keys[cid]
            return replace(column, distinct=min(column.distinct, matched),
                           domain=min(column.domain_size, domain))
        kept = min(out / side_rows, 1.0) if side_rows > 0 else 0.0
        return column.with_distinct(shrink_distinct(column.distinct, side_rows, kept))

    def _aggregate_column(self, plan: Aggregate, cid: int) -> ColumnEstimate:
        for e, f in zip(plan.group_exprs, plan.group_fields):
            if f.cid == cid:
                key = self._expression(plan.input, e)
                return replace(key, group_of=(id(plan), len(plan.group_exprs)))
        rows = self.rows(plan)
        for a, f in zip(plan.aggs, plan.agg_fields):
            if f.cid == cid:
                return self._aggregate_value(plan.input, a, rows)
        return derived_column(pa.null(), rows)

    def _aggregate_value(self, plan: LogicalPlan, a: AggCall, rows: float) -> ColumnEstimate:
        """An aggregate's result column over ``rows`` groups of ``plan``'s rows."""
        if a.name in _VALUE_AGGREGATES and len(a.args) == 1:
            value = self._expression(plan, a.args[0])
            return replace(value, dtype=a.dtype, source=None, unique=False).capped(rows)
        group_size = self.rows(plan) / rows if rows > 0 else 1.0
        argument = self._expression(plan, a.args[0]) if len(a.args) == 1 else None
        normal = None if a.distinct else aggregate_normal(a.name, argument, group_size)
        if a.name in _COUNTS and not a.distinct and rows > 0:
            # counts spread around the mean group size: about 0 .. twice the mean
            value = derived_column(a.dtype, min(rows, 2.0 * group_size + 1.0))
        else:
            value = derived_column(a.dtype, rows)
        return replace(value, normal=normal)

    def _expression(self, plan: LogicalPlan, e: Expr) -> ColumnEstimate:
        """The estimate of expression ``e`` over ``plan``'s rows."""
        rows = self.rows(plan)
        if isinstance(e, ColumnRef):
            if e.cid in self._column_ids(plan):
                return self.column(plan, e.cid)
            return derived_column(e.dtype, rows)  # an outer reference: one value per row
        if isinstance(e, Literal):
            return derived_column(e.dtype, 1.0 if rows >= 1 else rows)
        if isinstance(e, Cast):
            inner = self._expression(plan, e.arg)
            return replace(inner, dtype=e.dtype, low=None, high=None, histogram=())
        if isinstance(e, Call) and e.name == "extract_year" and len(e.args) == 1:
            years = self._years(self._expression(plan, e.args[0]))
            if years is not None:
                return derived_column(e.dtype, min(years, rows))
        if isinstance(e, Case):
            values = [*e.values, e.otherwise]
            count = sum(self._expression(plan, v).distinct for v in values)
            return derived_column(e.dtype, min(count, rows))
        counts = [self.column(plan, c).distinct for c in column_ids(e)
                  if c in self._column_ids(plan)]
        distinct = min(math.prod(counts), rows, _constants_allowed(plan, e))
        return derived_column(e.dtype, distinct)

    @staticmethod
    def _years(column: ColumnEstimate) -> float | None:
        """Calendar years a date column spans (from its min/max), None when unknown."""
        if not pa.types.is_date(column.dtype) or column.low is None or column.high is None:
            return None
        try:
            first = (_EPOCH + dt.timedelta(days=math.floor(column.low))).year
            last = (_EPOCH + dt.timedelta(days=math.floor(column.high))).year
        except OverflowError:
            return None
        return float(min(last - first + 1, max(column.distinct, 1.0)))

    # -- helpers ---------------------------------------------------------------------------
    def _filter(self, plan: Scan | Filter) -> Conjunction:
        hit = self._filters.get(id(plan))
        if hit is not None and hit[0] is plan:
            return hit[1]
        if isinstance(plan, Scan):
            scan = plan

            def base(cid: int) -> ColumnEstimate | None:
                return self._base_column(scan, cid) if cid in self._column_ids(scan) else None
            value = conjunction(plan.filters, base)
        else:
            value = conjunction([plan.predicate], self._lookup(plan.input))
        self._filters[id(plan)] = (plan, value)
        return value

    def _column_ids(self, plan: LogicalPlan) -> set[int]:
        hit = self._ids.get(id(plan))
        if hit is not None and hit[0] is plan:
            return hit[1]
        ids = plan.column_ids
        self._ids[id(plan)] = (plan, ids)
        return ids

    def _lookup(self, plan: LogicalPlan) -> Lookup:
        ids = self._column_ids(plan)
        return lambda cid: self.column(plan, cid) if cid in ids else None

    def _lookup_either(self, left: LogicalPlan, right: LogicalPlan) -> Lookup:
        first, second = self._lookup(left), self._lookup(right)
        return lambda cid: first(cid) or second(cid)


def _constants_allowed(plan: LogicalPlan, e: Expr) -> float:
    """How many values a filter below ``plan`` leaves expression ``e``: the number of
    constants of a conjunct ``e = c`` or ``e IN (c1, ...)`` found through filters, scans and
    joins (the expression's columns keep their ids there); infinity when there is none."""
    ids = column_ids(e)
    node: LogicalPlan | None = plan
    best = math.inf
    while node is not None:
        predicates: tuple[Expr, ...] = ()
        if isinstance(node, Scan):
            predicates = node.filters
        elif isinstance(node, Filter):
            predicates = (node.predicate,)
        for c in (c for p in predicates for c in conjuncts(p)):
            if isinstance(c, Call) and c.name in ("eq", "in_list") and c.args[0] == e and \
                    all(isinstance(v, Literal) for v in c.args[1:]):
                best = min(best, float(len(c.args) - 1))
        node = next((child for child in node.inputs if ids <= child.column_ids), None) \
            if isinstance(node, Filter | Join) else None
    return best


class _JoinParts:
    """A join condition taken apart: the equi-key pairs (estimates of both sides), the
    selectivity of the rest, and per key column (by id) the distinct values it keeps and
    its domain after the join (values found on both sides, within both domains)."""

    __slots__ = ("keys", "pairs", "residual")

    def __init__(self, pairs: KeyPairs, residual: float,
                 keys: dict[int, tuple[float, float]]) -> None:
        self.pairs = pairs
        self.residual = residual
        self.keys = keys


def table_rows(scan: Scan) -> float:
    """The scanned table's row count from its statistics, or the default."""
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

