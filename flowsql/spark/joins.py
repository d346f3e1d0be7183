"""Joins of every kind -> PySpark joins, keeping the planner's order and broadcast choice.

Spark does not reorder joins written in the DataFrame API (cost-based join reordering is
off by default), so the planned order survives as written. A hash join whose build side the
optimizer estimated at no more than ``Program.broadcast_rows`` rows gets ``F.broadcast`` on
that side, where Spark can honour it (the build side must be the inner side of an outer or
semi join). A sort-merge join is a plain join here: Spark picks its own algorithm.

Kinds Spark lacks are composed of kinds it has, each keeping every left row exactly once:

- ``null_aware`` anti (``NOT IN``): a left row survives when no right row makes the key
  comparison TRUE *or NULL* -- the condition ``eq OR (eq) IS NULL``, which Spark recognises
  and runs as its own null-aware anti join for one key;
- ``mark`` (``EXISTS`` / ``IN`` in expressions): the union of the semi join (mark TRUE) and
  the anti join (mark FALSE); when null-aware, left rows with no TRUE but some NULL
  comparison get a NULL mark;
- ``single`` (scalar subquery): a left join that fails, via ``raise_error``, when a left
  row (tagged with a row id) finds more than one match; when the right side cannot hold
  two rows (an aggregate without groups, the usual case) it is a plain left join.
"""

from __future__ import annotations

from flowsql.errors import PlanError
from flowsql.planner.expressions import Expr
from flowsql.planner.physical import (
    FilterExec,
    HashAggregateExec,
    HashJoinExec,
    LimitExec,
    NestedLoopJoinExec,
    PhysicalPlan,
    ProjectExec,
    SortAggregateExec,
    SortExec,
    SortMergeJoinExec,
    TopNExec,
    ValuesExec,
    WindowExec,
)
from flowsql.spark.codegen import Program
from flowsql.spark.expressions import Renderer

SINGLE_ROW_ERROR = "more than one row returned by a subquery used as an expression"
_ROW_ID = "_flowsql_row"
_MATCHES = "_flowsql_matches"
_SPARK_KIND = {"inner": "inner", "left": "left", "right": "right", "full": "full",
               "cross": "inner", "semi": "left_semi", "anti": "left_anti"}
# Kinds for which Spark can broadcast the given side.
_BROADCASTABLE = {"right": {"inner", "cross", "left", "semi", "anti", "mark", "single"},
                  "left": {"inner", "cross", "right"}}

Join = HashJoinExec | NestedLoopJoinExec | SortMergeJoinExec


def compile_hash_join(program: Program, node: HashJoinExec) -> str:
    keys = list(zip(node.left_keys, node.right_keys))
    side = node.build_side
    build = node.right if side == "right" else node.left
    broadcast = (side if build.est_rows <= program.broadcast_rows
                 and node.kind in _BROADCASTABLE.get(side, ()) else None)
    return _join(program, node, keys, node.residual, broadcast)


def compile_sort_merge_join(program: Program, node: SortMergeJoinExec) -> str:
    return _join(program, node, list(zip(node.left_keys, node.right_keys)), node.residual, None)


def compile_nested_loop_join(program: Program, node: NestedLoopJoinExec) -> str:
    return _join(program, node, [], node.condition, None)


def _and(*parts: str | None) -> str:
    present = [p for p in parts if p is not None]
    if not present:
        return "F.lit(True)"
    return present[0] if len(present) == 1 else "(" + " & ".join(present) + ")"


def _join(program: Program, node: Join, keys: list[tuple[Expr, Expr]],
          residual: Expr | None, broadcast: str | None) -> str:
    shared = {f.cid for f in node.left.schema} & {f.cid for f in node.right.schema}
    if shared:
        raise PlanError(f"{type(node).__name__}: both inputs produce column ids "
                        f"{sorted(shared)}")
    left, right = program.compile(node.left), program.compile(node.right)
    if broadcast == "left":
        left = f"F.broadcast({left})"
    elif broadcast == "right":
        right = f"F.broadcast({right})"
    r = Renderer(program.column)
    eq = _and(*(f"({r.render(a)} == {r.render(b)})" for a, b in keys)) if keys else None
    rest = r.render(residual) if residual is not None else None
    kind = node.kind
    null_aware = not isinstance(node, SortMergeJoinExec) and node.null_aware

    if kind == "mark":
        assert not isinstance(node, SortMergeJoinExec) and node.mark is not None
        return _mark(program, left, right, eq, rest, program.column(node.mark.cid),
                     node.null_aware)
    if kind == "single":
        if at_most_one_row(node.right):
            return program.assign(f"{left}.join({right}, {_and(eq, rest)}, 'left')")
        return _single(program, left, right, _and(eq, rest))
    if kind == "anti" and null_aware:
        # With no keys (nested loop), the whole condition is the IN comparison.
        comparison, rest = (eq, rest) if eq is not None else (rest or "F.lit(True)", None)
        return program.assign(
            f"{left}.join({right}, {_and(rest, f'({comparison} | {comparison}.isNull())')}, "
            "'left_anti')")
    if kind not in _SPARK_KIND:
        raise PlanError(f"the Spark engine does not support {kind} joins")
    condition = _and(eq, rest)
    if kind in ("inner", "cross") and condition == "F.lit(True)":
        return program.assign(f"{left}.crossJoin({right})")
    return program.assign(f"{left}.join({right}, {condition}, {_SPARK_KIND[kind]!r})")


def at_most_one_row(plan: PhysicalPlan) -> bool:
    """True when ``plan`` can never produce two rows (an aggregate without groups, a
    LIMIT 1, ...): a single join over it needs no duplicate-match check."""
    if isinstance(plan, HashAggregateExec | SortAggregateExec):
        return not plan.group_exprs and bool(plan.aggs)
    if isinstance(plan, LimitExec | TopNExec):
        return (plan.limit is not None and plan.limit <= 1) or at_most_one_row(plan.input)
    if isinstance(plan, ValuesExec):
        return len(plan.rows) <= 1
    if isinstance(plan, ProjectExec | FilterExec | SortExec | WindowExec):
        return at_most_one_row(plan.input)
    return False


def _mark(program: Program, left: str, right: str, eq: str | None, rest: str | None,
          mark: str, null_aware: bool) -> str:
    if not null_aware or (eq is None and rest is None):
        condition = _and(eq, rest)
        matched = f"{left}.join({right}, {condition}, 'left_semi')"
        unmatched = f"{left}.join({right}, {condition}, 'left_anti')"
        return program.assign(f"{matched}.withColumn({mark!r}, F.lit(True)).unionAll(\n"
                              f"    {unmatched}.withColumn({mark!r}, F.lit(False)))")
    comparison, rest = (eq, rest) if eq is not None else (rest, None)
    true = _and(rest, comparison)
    unknown = _and(rest, f"{comparison}.isNull()")
    true_or_unknown = _and(rest, f"({comparison} | {comparison}.isNull())")
    return program.assign(
        f"{left}.join({right}, {true}, 'left_semi').withColumn({mark!r}, F.lit(True))"
        f".unionAll(\n"
        f"    {left}.join({right}, {true}, 'left_anti').join({right}, {unknown}, 'left_semi')"
        f".withColumn({mark!r}, F.lit(None).cast('boolean'))).unionAll(\n"
        f"    {left}.join({right}, {true_or_unknown}, 'left_anti')"
        f".withColumn({mark!r}, F.lit(False)))")


def _single(program: Program, left: str, right: str, condition: str) -> str:
    joined = program.assign(
        f"{left}.withColumn({_ROW_ID!r}, F.monotonically_increasing_id())"
        f".join({right}, {condition}, 'left')")
    counted = program.assign(
        f"{joined}.withColumn({_MATCHES!r}, "
        f"F.count(F.lit(1)).over(Window.partitionBy({_ROW_ID!r})))")
    return program.assign(
        f"{counted}.where(F.when(F.col({_MATCHES!r}) > 1, "
        f"F.raise_error(F.lit({SINGLE_ROW_ERROR!r}))).otherwise(F.lit(True)))"
        f".drop({_ROW_ID!r}, {_MATCHES!r})")
