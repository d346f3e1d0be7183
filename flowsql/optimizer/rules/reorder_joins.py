"""Choose the order of a tree of inner/cross joins by estimated cost.

A maximal tree of inner and cross joins is flattened into its leaves (each reordered on its
own first; outer, semi and anti joins are leaves, so their constraints hold) and its join
graph (:mod:`flowsql.optimizer.join_graph`: edges from the conjuncts and from the
equivalence classes of columns, so ``a = b AND b = c`` also joins ``a``'s and ``c``'s
relations). Then:

* up to ``MAX_DP_RELATIONS`` leaves, dynamic programming over the csg-cmp pairs of the graph
  (DPccp, :mod:`flowsql.optimizer.dpccp`) finds the cheapest bushy tree without cross
  products; each connected set of relations gets one row estimate (the estimator's rows of
  the first join built for it), and the cost of a tree is the sum of
  ``cost.join_cost(left_rows, right_rows, out_rows)`` over its joins;
* above that (or when the graph has more csg-cmp pairs than ``MAX_DP_PAIRS``, as a clique of
  relations all joined on one key does), and to combine the connected components of a
  disconnected graph: greedy operator ordering -- the pair of components whose join is
  cheapest is joined until one is left, a pair connected by some conjunct always beating an
  unconnected one, so a cross product appears only when the graph is disconnected.

In ``execution.runtime-mode`` = ``streaming`` the graph has only the edges the query wrote
and the order is greedy, as Flink keeps a streaming join order: an implied edge or a bushy
tree could pair one side of a window join (or an interval join) with a third input first,
and the join of the two windowed sides would then become an updating join with unbounded
state.

The larger input of each join goes left (the probe side of a hash join). A Project on top
restores the original column order. Trees of two leaves are left alone.
"""

from __future__ import annotations

from flowsql.optimizer.cardinality import CardinalityEstimator
from flowsql.optimizer.columns import project_onto
from flowsql.optimizer.context import OptimizerContext
from flowsql.optimizer.cost import join_cost
from flowsql.optimizer.dpccp import csg_cmp_pairs
from flowsql.optimizer.join_graph import JoinGraph, flatten_inner_joins, is_inner_join
from flowsql.optimizer.plan_window_aggregate import runtime_mode
from flowsql.planner.expressions import Expr, conjoin
from flowsql.planner.logical import Filter, Join, LogicalPlan

# DPccp's work grows with the csg-cmp pairs: a chain of 12 has 286, a star 11 264, a clique
# of 12 about 265 000 (seconds in Python); greedy takes over beyond these bounds.
MAX_DP_RELATIONS = 12
MAX_DP_PAIRS = 50_000


def reorder_joins(plan: LogicalPlan, context: OptimizerContext) -> LogicalPlan:
    return _reorder(plan, context.estimator, runtime_mode(context.settings) != "streaming")


def _reorder(plan: LogicalPlan, estimator: CardinalityEstimator, search: bool) -> LogicalPlan:
    """``search`` False: the query's own edges and greedy ordering only (streaming)."""
    if not is_inner_join(plan):
        inputs = tuple(_reorder(c, estimator, search) for c in plan.inputs)
        if all(a is b for a, b in zip(inputs, plan.inputs)):
            return plan
        return plan.with_inputs(inputs)
    leaves: list[LogicalPlan] = []
    preds: list[Expr] = []
    flatten_inner_joins(plan, leaves, preds)
    leaves = [_reorder(leaf, estimator, search) for leaf in leaves]
    if len(leaves) < 3:
        same = all(a is b for a, b in zip(leaves, plan.inputs))
        return plan if same else plan.with_inputs(tuple(leaves))
    graph = JoinGraph(leaves, preds, use_classes=search)
    ordered = order_joins(graph, estimator, dynamic_programming=search)
    predicate = conjoin(graph.leftover)
    if predicate is not None:
        ordered = Filter(ordered, predicate)
    return project_onto(ordered, plan.schema)


def order_joins(graph: JoinGraph, estimator: CardinalityEstimator,
                dynamic_programming: bool = True) -> LogicalPlan:
    """The cheapest join tree of the graph's relations that the search finds."""
    components = [(leaf, 1 << i) for i, leaf in enumerate(graph.leaves)]
    if dynamic_programming and graph.size <= MAX_DP_RELATIONS:
        solved = DPccp(graph, estimator).solve()
        if solved is not None:
            components = solved
    return _greedy(graph, components, estimator)


class DPccp:
    """Dynamic programming over the csg-cmp pairs of a join graph."""

    def __init__(self, graph: JoinGraph, estimator: CardinalityEstimator) -> None:
        self._graph = graph
        self._estimator = estimator
        self.rows: dict[int, float] = {}
        self.cost: dict[int, float] = {}
        self._split: dict[int, tuple[int, int]] = {}
        self._plans: dict[int, LogicalPlan] = {}
        for i, leaf in enumerate(graph.leaves):
            self._plans[1 << i] = leaf
            self.rows[1 << i] = estimator.rows(leaf)
            self.cost[1 << i] = 0.0

    def solve(self) -> list[tuple[LogicalPlan, int]] | None:
        """The best plan of each connected component of the graph (largest sets first), or
        None when the graph has too many csg-cmp pairs for dynamic programming."""
        pairs: list[tuple[int, int]] = []
        for pair in csg_cmp_pairs(self._graph.neighbors):
            pairs.append(pair)
            if len(pairs) > MAX_DP_PAIRS:
                return None
        # every pair of a smaller union first: a pair's halves are then final
        pairs.sort(key=lambda p: (p[0] | p[1]).bit_count())
        for left, right in pairs:
            self._consider(left, right)
        return self._components()

    def _consider(self, left: int, right: int) -> None:
        union = left | right
        if union not in self.rows:
            first = self._graph.join(self.plan(left), left, self.plan(right), right,
                                     self.rows[left], self.rows[right])
            self.rows[union] = self._estimator.rows(first)
        cost = (self.cost[left] + self.cost[right]
                + join_cost(self.rows[left], self.rows[right], self.rows[union]))
        if union not in self.cost or cost < self.cost[union]:
            self.cost[union] = cost
            self._split[union] = (left, right)

    def plan(self, relations: int) -> LogicalPlan:
        """The best plan of a solved connected set (built once, when first asked for)."""
        built = self._plans.get(relations)
        if built is None:
            left, right = self._split[relations]
            built = self._graph.join(self.plan(left), left, self.plan(right), right,
                                     self.rows[left], self.rows[right])
            self._plans[relations] = built
        return built

    def _components(self) -> list[tuple[LogicalPlan, int]]:
        """The maximal solved sets: the connected components of the graph."""
        out: list[tuple[LogicalPlan, int]] = []
        covered = 0
        for relations in sorted(self.cost, key=lambda s: -s.bit_count()):
            if relations & covered == 0:
                out.append((self.plan(relations), relations))
                covered |= relations
        return out


def _greedy(graph: JoinGraph, components: list[tuple[LogicalPlan, int]],
            estimator: CardinalityEstimator) -> LogicalPlan:
    """Greedy operator ordering over ``components`` (plans with their relation sets)."""
    components = list(components)
    while len(components) > 1:
        best: tuple[tuple[bool, float], int, int, Join] | None = None
        for i in range(len(components)):
            for j in range(i + 1, len(components)):
                (a, sa), (b, sb) = components[i], components[j]
                rows_a, rows_b = estimator.rows(a), estimator.rows(b)
                candidate = graph.join(a, sa, b, sb, rows_a, rows_b)
                score = (candidate.condition is None,
                         join_cost(rows_a, rows_b, estimator.rows(candidate)))
                if best is None or score < best[0]:
                    best = (score, i, j, candidate)
        assert best is not None
        _, i, j, candidate = best
        merged = components[i][1] | components[j][1]
        components = [c for k, c in enumerate(components) if k not in (i, j)]
        components.append((candidate, merged))
    return components[0][0]
