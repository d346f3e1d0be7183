"""The logical rewrite rules, in the order the driver runs them.

Each rule is ``rule(plan, context) -> plan`` in a module of the same name; the name is also
what ``optimizer.disable-rules`` switches off and what EXPLAIN VERBOSE lists.
"""

from __future__ import annotations

from collections.abc import Callable

from flowsql.optimizer.context import OptimizerContext
from flowsql.optimizer.rules.decorrelate_subqueries import decorrelate_subqueries
from flowsql.optimizer.rules.infer_equivalences import infer_equivalences
from flowsql.optimizer.rules.migrate_predicates import migrate_predicates
from flowsql.optimizer.rules.order_predicates import order_predicates
from flowsql.optimizer.rules.prune_columns import prune_columns
from flowsql.optimizer.rules.push_down_filter import push_down_filter
from flowsql.optimizer.rules.push_down_semi_join import push_down_semi_join
from flowsql.optimizer.rules.reduce_by_semi_join import reduce_by_semi_join
from flowsql.optimizer.rules.remove_subquery_alias import remove_subquery_alias
from flowsql.optimizer.rules.reorder_joins import reorder_joins
from flowsql.optimizer.rules.simplify_expressions import simplify_expressions
from flowsql.planner.logical import LogicalPlan

Rule = Callable[[LogicalPlan, OptimizerContext], LogicalPlan]

RULES: tuple[Rule, ...] = (
    # First: the pull-up in decorrelation sees through inlined subqueries only without
    # alias nodes, and no later rule needs them.
    remove_subquery_alias,
    # Before every rule that moves predicates: afterwards no expression holds a plan, so
    # pushdown, pruning and join ordering see every join, including those from subqueries.
    decorrelate_subqueries,
    # After decorrelation (it leaves CASE / IS NULL around literals) and before pushdown:
    # folded date arithmetic reaches scans, and OR-factored join predicates become
    # conjuncts that pushdown can turn into join conditions.
    simplify_expressions,
    # Before join ordering: it turns WHERE equalities into the join conditions that define
    # the join graph.
    push_down_filter,
    # After pushdown (it reads the join conditions and scan filters pushdown made; it runs
    # pushdown itself on what it adds) and before join ordering: the implied equalities are
    # the edges of the join graph, the implied constants reduce the leaves' estimates.
    infer_equivalences,
    # After pushdown (the reducer is a scan with the filters pushdown gave it) and before
    # join ordering (the reduced scan is a smaller leaf of the subquery's join block).
    reduce_by_semi_join,
    # After pushdown (which gives the semi join from an IN / EXISTS its condition) and
    # before join ordering (the input it lands on becomes a smaller leaf of the block).
    push_down_semi_join,
    # After pushdown (needs the join graph and filtered leaf estimates), before pruning (it
    # adds a Project restoring column order that pruning may then drop).
    reorder_joins,
    # After join ordering (which orders joins by the filtered inputs pushdown produced) and
    # after pushdown (which would push a lifted predicate straight back down): lifts an
    # expensive user-defined predicate above a join that keeps few rows.
    migrate_predicates,
    # After every rule that moves predicates (it orders the conjuncts where they finally
    # stand); the runtime evaluates them in this order on the surviving rows.
    order_predicates,
    # Last: every earlier rewrite may still need columns that pruning would drop.
    prune_columns,
)
