"""DPccp: exactly the csg-cmp pairs of a join graph, and the cheapest tree over them."""

from __future__ import annotations

import functools
from itertools import combinations

import pytest

from flowsql.optimizer.cardinality import CardinalityEstimator
from flowsql.optimizer.cost import join_cost
from flowsql.optimizer.dpccp import csg_cmp_pairs
from flowsql.optimizer.join_graph import JoinGraph
from flowsql.optimizer.rules.reorder_joins import DPccp
from flowsql.planner import types as T
from flowsql.planner.logical import Join, LogicalPlan, Scan, walk_plan

from .planbuilder import col, eq, scan, table


def _graph(n: int, edges: list[tuple[int, int]]) -> list[int]:
    neighbors = [0] * n
    for a, b in edges:
        neighbors[a] |= 1 << b
        neighbors[b] |= 1 << a
    return neighbors


def _connected(s: int, neighbors: list[int]) -> bool:
    seen = frontier = s & -s
    while frontier:
        reached = 0
        for i in range(len(neighbors)):
            if frontier >> i & 1:
                reached |= neighbors[i]
        frontier = reached & s & ~seen
        seen |= frontier
    return seen == s


def _brute_force_pairs(neighbors: list[int]) -> set[frozenset[int]]:
    n = len(neighbors)
    out: set[frozenset[int]] = set()
    for s1 in range(1, 1 << n):
        for s2 in range(1, 1 << n):
            if s1 & s2 or not (_connected(s1, neighbors) and _connected(s2, neighbors)):
                continue
            if any(s1 >> i & 1 and neighbors[i] & s2 for i in range(n)):
                out.add(frozenset((s1, s2)))
    return out


SHAPES = {
    # name: (relations, edges, number of csg-cmp pairs from the closed formulas)
    "chain": (6, [(i, i + 1) for i in range(5)], (6 ** 3 - 6) // 6),
    "star": (6, [(0, i) for i in range(1, 6)], (6 - 1) * 2 ** (6 - 2)),
    "cycle": (6, [(i, (i + 1) % 6) for i in range(6)], (6 ** 3 - 2 * 6 ** 2 + 6) // 2),
    "clique": (5, list(combinations(range(5), 2)), (3 ** 5 - 2 ** 6 + 1) // 2),
}


@pytest.mark.parametrize("shape", SHAPES)
def test_enumerates_exactly_the_csg_cmp_pairs(shape):
    n, edges, count = SHAPES[shape]
    neighbors = _graph(n, edges)
    pairs = list(csg_cmp_pairs(neighbors))
    assert len(pairs) == count
    assert len({frozenset(p) for p in pairs}) == count  # each pair once
    assert {frozenset(p) for p in pairs} == _brute_force_pairs(neighbors)


def test_disconnected_graph_has_no_pair_across_components():
    neighbors = _graph(4, [(0, 1), (2, 3)])
    assert {frozenset(p) for p in csg_cmp_pairs(neighbors)} == {frozenset((1, 2)),
                                                                 frozenset((4, 8))}


class _HandEstimates(CardinalityEstimator):
    """Rows by the set of tables a plan scans, from a table: estimates made by hand."""

    def __init__(self, rows: dict[frozenset[str], float]) -> None:
        super().__init__()
        self._by_tables = rows

    def rows(self, plan: LogicalPlan) -> float:
        names = frozenset(s.table.name for s in walk_plan(plan) if isinstance(s, Scan))
        return self._by_tables[names]


def _chain(names: str) -> tuple[list[LogicalPlan], list]:
    scans = [scan(table(n, 1, k=T.INT64, j=T.INT64)) for n in names]
    preds = [eq(col(scans[i], "j"), col(scans[i + 1], "k")) for i in range(len(scans) - 1)]
    return scans, preds


def _chain_rows(names: str, base: dict[str, float], shrink: dict[str, float]):
    """Rows of every contiguous run of the chain: the product of its tables' rows times the
    selectivity of each edge inside it (edge ``xy`` keyed by its two names)."""
    out: dict[frozenset[str], float] = {}
    for i in range(len(names)):
        for j in range(i + 1, len(names) + 1):
            run = names[i:j]
            rows = 1.0
            for name in run:
                rows *= base[name]
            for a, b in zip(run, run[1:]):
                rows *= shrink[a + b]
            out[frozenset(run)] = rows
    return out


def _best_cost(rows: dict[frozenset[str], float], names: str) -> float:
    """Exhaustive search over every bushy tree of a chain without cross products."""

    @functools.cache
    def best(i: int, j: int) -> float:
        if j - i == 1:
            return 0.0
        return min(best(i, m) + best(m, j)
                   + join_cost(rows[frozenset(names[i:m])], rows[frozenset(names[m:j])],
                               rows[frozenset(names[i:j])])
                   for m in range(i + 1, j))

    return best(0, len(names))


def test_picks_the_cheapest_tree_for_hand_built_estimates():
    """A chain a-b-c-d-e where the d-e join is very selective: the cheapest tree joins d
    and e first, which left-deep greedy from the biggest table would not."""
    names = "abcde"
    base = {"a": 1e6, "b": 1e5, "c": 1e4, "d": 1e5, "e": 1e3}
    shrink = {"ab": 1e-5, "bc": 1e-4, "cd": 1e-4, "de": 1e-7}
    rows = _chain_rows(names, base, shrink)
    scans, preds = _chain(names)
    estimator = _HandEstimates(rows)
    graph = JoinGraph(scans, preds)
    dp = DPccp(graph, estimator)
    components = dp.solve()
    assert components is not None and len(components) == 1
    plan, relations = components[0]
    assert relations == 0b11111
    assert dp.cost[relations] == pytest.approx(_best_cost(rows, names))
    # the join of d and e is a subtree of the chosen plan
    subtrees = [frozenset(s.table.name for s in walk_plan(j) if isinstance(s, Scan))
                for j in walk_plan(plan) if isinstance(j, Join)]
    assert frozenset("de") in subtrees
    # every join probes with its larger input
    for j in walk_plan(plan):
        if isinstance(j, Join):
            assert estimator.rows(j.left) >= estimator.rows(j.right)


@pytest.mark.parametrize("seed", range(5))
def test_matches_exhaustive_search_on_random_chains(seed):
    import random

    rng = random.Random(seed)
    names = "abcdefg"
    base = {n: 10 ** rng.uniform(1, 6) for n in names}
    shrink = {a + b: 10 ** -rng.uniform(0, 6) for a, b in zip(names, names[1:])}
    rows = _chain_rows(names, base, shrink)
    scans, preds = _chain(names)
    dp = DPccp(JoinGraph(scans, preds), _HandEstimates(rows))
    assert dp.solve() is not None
    assert dp.cost[(1 << len(names)) - 1] == pytest.approx(_best_cost(rows, names))


@pytest.mark.parametrize("shape", ["chain", "clique"])
def test_greedy_takes_over_beyond_the_bounds(shape):
    """14 relations (over MAX_DP_RELATIONS), and 12 on one key (a clique, over
    MAX_DP_PAIRS): greedy ordering still joins everything without a cross product."""
    from flowsql.optimizer import optimize
    from flowsql.planner.expressions import conjoin

    from .planbuilder import cross, filter_

    n = 14 if shape == "chain" else 12
    scans = [scan(table(f"t{i}", 100 * (i + 1), k=T.INT64, j=T.INT64)) for i in range(n)]
    key = "j" if shape == "chain" else "k"
    preds = [eq(col(scans[i], key), col(scans[i + 1], "k")) for i in range(n - 1)]
    plan = filter_(cross(*scans), conjoin(preds))  # type: ignore[arg-type]
    result = optimize(plan).plan
    joins = [j for j in walk_plan(result) if isinstance(j, Join)]
    assert len(joins) == n - 1
    assert all(j.kind == "inner" for j in joins)
    assert {s.table.name for s in walk_plan(result) if isinstance(s, Scan)} == \
        {f"t{i}" for i in range(n)}
