"""The costed choice between the two decorrelations of one subquery.

Pull-up (``pull_up``) evaluates the subquery once over all of its input and joins the result
(grouped by the correlation keys where there is an aggregate) to the outer rows; the domain
rewrite (``domain_join``) first computes the distinct outer values the subquery reads and
evaluates the subquery only for those, at the price of computing the outer input twice
(once for the rows, once for their domain). Pull-up wins when the outer input is large or
expensive and meets most of the subquery's groups; the domain wins when few outer values
select a small part of a large subquery input.

Where both apply, the rewrite builds both plans and this class keeps the cheaper by the
cost model (``cost.plan_cost`` over the estimator's rows). Each plan is costed as the later
rules will leave it (``normalize``: the rule passes pushdown and the semi-join reduction of
grouped subqueries), since the plans as built still hold WHERE equalities above cross joins
and unreduced aggregates. Every decision is recorded in ``notes``, which EXPLAIN VERBOSE
prints.
"""

from __future__ import annotations

from collections.abc import Callable

from flowsql.optimizer.cardinality import CardinalityEstimator
from flowsql.optimizer.cost import plan_cost
from flowsql.planner.logical import LogicalPlan, Scan, walk_plan

PULL_UP = "pull-up"
DOMAIN = "domain join"


class MethodChoice:
    """Compares the two decorrelated plans of a subquery; ``notes`` lists the decisions,
    one line each, in the order they were made."""

    def __init__(self, estimator: CardinalityEstimator,
                 normalize: Callable[[LogicalPlan], LogicalPlan]) -> None:
        self.estimator = estimator
        self.normalize = normalize
        self.notes: list[str] = []

    def cost(self, plan: LogicalPlan) -> float:
        return plan_cost(self.normalize(plan), self.estimator)

    def choose(self, subquery: LogicalPlan, pulled: LogicalPlan,
               domain: LogicalPlan) -> str:
        """``PULL_UP`` or ``DOMAIN``: the method whose plan costs less (pull-up on a tie:
        it computes the outer input once)."""
        pull_cost, domain_cost = self.cost(pulled), self.cost(domain)
        method = DOMAIN if domain_cost < pull_cost else PULL_UP
        self.notes.append(f"decorrelate_subqueries: subquery over {_tables(subquery)} by "
                          f"{method} (cost {pull_cost:.4g} by pull-up, {domain_cost:.4g} by "
                          f"domain join)")
        return method


def _tables(plan: LogicalPlan) -> str:
    names = sorted({n.table.name for n in walk_plan(plan) if isinstance(n, Scan)})
    return ", ".join(names) if names else "no table"
