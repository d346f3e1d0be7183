"""Exchange placement rules by node, bottom-up: the base of the streaming exchange pass
(``optimizer/streaming/distribution.py``), which adds its keyed streaming operators.
Batch plans get their exchanges from the physical search (``optimizer/search``) instead.

One bottom-up pass: each node learns what its inputs deliver (a
:class:`~flowsql.planner.properties.Distribution`), states what it requires, and an
:class:`ExchangeExec` is put only where a delivered distribution does not satisfy the
requirement. Requirements:

* hash join: both inputs hash-partitioned by corresponding keys (an input already hashed
  by a subsequence of its keys keeps its partitioning and the other side is hashed to match);
  or, when a side the join kind allows to replicate has fewer estimated rows than
  ``optimizer.broadcast-threshold-rows`` (default 100000) -- or up to ten times that, when
  its copies on every subtask are fewer rows than the shuffle would move -- that side
  broadcast and the other left where it is. NOT IN / IN joins (``null_aware``) always broadcast their right side,
  since one NULL on it changes the answer for every left row. Nested-loop joins broadcast
  the smaller allowed side, or run on one subtask (full joins).
* aggregate: rows of a group together. Already co-located input (e.g. hashed by a join key
  that is one of the group keys) is aggregated where it is; otherwise decomposable
  aggregates (sum, count, min, max, any_value, bool_and, bool_or, and avg as sum and count)
  are split into a partial aggregate before a hash exchange on the group keys and a final
  one after it (a gather for a global aggregate); others are exchanged unsplit.
* sort, top-N, limit, and windows without PARTITION BY: one subtask (top-N and limit first
  cut every subtask's input to limit + offset rows); windows with one PARTITION BY: hash on it.
* INTERSECT / EXCEPT / UNION (distinct): hash on all columns; UNION ALL: any.
* the root: one subtask (a final gather hands the result to the caller).

Both sides of a hash exchange pair hash keys of identical types (the physical planner casts
join keys to their common type; this pass checks it), so equal values meet on one subtask.
"""

from __future__ import annotations

from collections.abc import Callable

from flowsql.errors import PlanError
from flowsql.optimizer.search.aggregate_split import COMBINE, split_aggregate
from flowsql.planner.config.settings import SettingValues
from flowsql.planner.expressions import ColumnRef, Expr
from flowsql.planner.physical import (
    ExchangeExec,
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
)
from flowsql.planner.properties import ANY, SINGLE, Distribution

Placed = tuple[PhysicalPlan, Distribution]


def parallelism(settings: dict[str, str]) -> int:
    """The ``parallelism.default`` setting, validated."""
    return SettingValues(settings).integer("parallelism.default")


def _exchange(node: PhysicalPlan, kind: str, keys: tuple[Expr, ...] = ()) -> PhysicalPlan:
    return ExchangeExec(node, kind, keys, node.est_rows)


def _gather(node: PhysicalPlan) -> Placed:
    return _exchange(node, "gather"), SINGLE


def _hashed(node: PhysicalPlan, keys: tuple[Expr, ...]) -> Placed:
    """Hash ``node`` on ``keys``; what it delivers is named by column ids when it can be."""
    refs = [k.cid for k in keys if isinstance(k, ColumnRef)]
    delivered = Distribution.hash(tuple(refs)) if len(refs) == len(keys) else ANY
    return _exchange(node, "hash", keys), delivered


def _renamed(delivered: Distribution, mapping: dict[int, int]) -> Distribution:
    """The distribution seen through a node that renames column ids (project, aggregate);
    key sets with a column the node drops are forgotten."""
    if delivered.kind != "hash":
        return delivered
    kept = [tuple(mapping[c] for c in keys) for keys in delivered.keysets
            if all(c in mapping for c in keys)]
    return Distribution.hash(*kept)


def _key_positions(delivered: Distribution, keys: tuple[Expr, ...]) -> list[tuple[int, ...]]:
    """Positions J such that ``delivered`` is a hash on exactly ``keys[j] for j in J``."""
    if delivered.kind != "hash":
        return []
    position: dict[int, int] = {}
    for index, key in enumerate(keys):
        if isinstance(key, ColumnRef):
            position.setdefault(key.cid, index)
    return [tuple(position[c] for c in keyset) for keyset in delivered.keysets
            if all(c in position for c in keyset)]


class _Pass:
    def __init__(self, broadcast_threshold: int, parallelism: int = 2) -> None:
        self.threshold = broadcast_threshold
        self.parallelism = parallelism
        self.rules: dict[type, Callable[[PhysicalPlan], Placed]] = {
            TableScanExec: lambda n: (n, ANY),
            ValuesExec: lambda n: (n, SINGLE),
            FilterExec: self._passthrough,
            TableFunctionExec: self._passthrough,
            ProjectExec: self._project,  # type: ignore[dict-item]
            HashJoinExec: self._hash_join,  # type: ignore[dict-item]
            NestedLoopJoinExec: self._loop_join,  # type: ignore[dict-item]
            HashAggregateExec: self._aggregate,  # type: ignore[dict-item]
            WindowExec: self._window,  # type: ignore[dict-item]
            SortExec: self._single,
            TopNExec: self._top_n,  # type: ignore[dict-item]
            LimitExec: self._limit,  # type: ignore[dict-item]
            SetOpExec: self._set_op,  # type: ignore[dict-item]
        }

    def visit(self, node: PhysicalPlan) -> Placed:
        rule = self.rules.get(type(node))
        if rule is None:
            raise PlanError(f"distribution: no rule for {type(node).__name__}")
        return rule(node)

    # -- unary nodes ----------------------------------------------------------------------

    def _passthrough(self, node: PhysicalPlan) -> Placed:
        child, delivered = self.visit(node.inputs[0])
        return node.with_inputs((child,)), delivered

    def _project(self, node: ProjectExec) -> Placed:
        child, delivered = self.visit(node.input)
        mapping = {e.cid: f.cid for e, f in zip(node.exprs, node.fields)
                   if isinstance(e, ColumnRef)}
        return node.with_inputs((child,)), _renamed(delivered, mapping)

    def _single(self, node: PhysicalPlan) -> Placed:
        child, delivered = self.visit(node.inputs[0])
        if delivered != SINGLE:
            child, delivered = _gather(child)
        return node.with_inputs((child,)), SINGLE

    def _top_n(self, node: TopNExec) -> Placed:
        child, delivered = self.visit(node.input)
        if delivered != SINGLE:
            partial = TopNExec(child, node.keys, node.limit + node.offset, 0, node.est_rows)
            child = _gather(partial)[0]
        return node.with_inputs((child,)), SINGLE

    def _limit(self, node: LimitExec) -> Placed:
        child, delivered = self.visit(node.input)
        if delivered != SINGLE:
            if node.limit is not None:
                child = LimitExec(child, node.limit + node.offset, 0, node.est_rows)
            child = _gather(child)[0]
        return node.with_inputs((child,)), SINGLE

    def _window(self, node: WindowExec) -> Placed:
        child, delivered = self.visit(node.input)
        partitions = {call.partition_by for call in node.calls}
        keys = next(iter(partitions)) if len(partitions) == 1 else ()
        if not keys:
            gathered = child if delivered == SINGLE else _gather(child)[0]
            return node.with_inputs((gathered,)), SINGLE
        refs = tuple(k.cid for k in keys if isinstance(k, ColumnRef))
        required = Distribution.hash(refs) if len(refs) == len(keys) else None
        if required is None or not delivered.satisfies(required):
            child, delivered = _hashed(child, keys)
        return node.with_inputs((child,)), delivered

    # -- aggregates -----------------------------------------------------------------------

    def _aggregate(self, node: HashAggregateExec) -> Placed:
        child, delivered = self.visit(node.input)
        to_output = {e.cid: f.cid for e, f in zip(node.group_exprs, node.group_fields)
                     if isinstance(e, ColumnRef)}
        if delivered == SINGLE or (to_output and delivered.satisfies(
                Distribution.hash(tuple(to_output)))):
            return node.with_inputs((child,)), _renamed(delivered, to_output)
        grouped = Distribution.hash(tuple(f.cid for f in node.group_fields))
        if all(not a.distinct and (a.name in COMBINE or a.name == "avg") for a in node.aggs):
            return self._split(node, child)
        if node.group_exprs:
            exchanged = _hashed(child, node.group_exprs)[0]
            return node.with_inputs((exchanged,)), grouped
        return node.with_inputs((_gather(child)[0],)), SINGLE

    def _split(self, node: HashAggregateExec, child: PhysicalPlan) -> Placed:
        """partial aggregate -> exchange on the group keys -> final aggregate (-> avg)."""
        split = split_aggregate(node)
        partial = split.partial(child)
        if node.group_exprs:
            exchanged, _ = _hashed(partial, split.exchange_keys)
            delivered = Distribution.hash(tuple(f.cid for f in node.group_fields))
        else:
            exchanged, delivered = _gather(partial)
        return split.final(exchanged)[-1], delivered

    # -- joins ----------------------------------------------------------------------------

    def _replicable(self, kind: str, null_aware: bool) -> tuple[str, ...]:
        """Sides a join of ``kind`` may replicate: never a side whose unmatched rows it
        emits, since every subtask would emit them."""
        if null_aware:
            return ("right",)
        return {"inner": ("left", "right"), "right": ("left",), "full": ()}.get(kind, ("right",))

    def _broadcast(self, node: PhysicalPlan, sides: tuple[Placed, Placed], side: str,
                   kind: str) -> Placed:
        """Replicate ``side``; the other stays where it is and keeps its partitioning if the
        join emits its rows unchanged."""
        (left, ld), (right, rd) = sides
        other = rd if side == "left" else ld
        small = left if side == "left" else right
        small = _gather(small)[0] if other == SINGLE else _exchange(small, "broadcast")
        inputs = (small, right) if side == "left" else (left, small)
        keeps = kind in ("inner", "right") if side == "left" else kind != "full"
        return node.with_inputs(inputs), other if keeps or other == SINGLE else ANY

    def _hash_join(self, node: HashJoinExec) -> Placed:
        sides = (self.visit(node.left), self.visit(node.right))
        (left, ld), (right, rd) = sides
        for a, b in zip(node.left_keys, node.right_keys):
            if not a.dtype.equals(b.dtype):
                raise PlanError(f"distribution: join keys {a} and {b} have different types "
                                f"({a.dtype} vs {b.dtype}); they would hash differently")
        if ld == SINGLE and rd == SINGLE:
            return node.with_inputs((left, right)), SINGLE
        allowed = self._replicable(node.kind, node.null_aware)
        rows = {"left": node.left.est_rows, "right": node.right.est_rows}
        small = min(allowed, key=lambda s: rows[s], default=None)
        if small is not None and (node.null_aware or rows[small] < self.threshold
                                  or self._cheaper_to_broadcast(node, ld, rd, rows, small)):
            return self._broadcast(node, sides, small, node.kind)
        shared = [j for j in _key_positions(ld, node.left_keys)
                  if j in _key_positions(rd, node.right_keys)]
        if shared:
            positions = shared[0]
        else:
            positions = next(iter(_key_positions(ld, node.left_keys) or
                                  _key_positions(rd, node.right_keys)),
                             tuple(range(len(node.left_keys))))
            lk = tuple(node.left_keys[j] for j in positions)
            rk = tuple(node.right_keys[j] for j in positions)
            if positions not in _key_positions(ld, node.left_keys):
                left, ld = _hashed(left, lk)
            if positions not in _key_positions(rd, node.right_keys):
                right, rd = _hashed(right, rk)
        if node.kind == "inner":
            delivered = Distribution.hash(*(ld.keysets + rd.keysets))
        elif node.kind == "right":
            delivered = rd
        elif node.kind == "full":
            delivered = ANY
        else:
            delivered = ld
        return node.with_inputs((left, right)), delivered

    def _cheaper_to_broadcast(self, node: HashJoinExec, ld: Distribution, rd: Distribution,
                              rows: dict[str, float], small: str) -> bool:
        """Above the threshold, broadcast still wins when it moves fewer rows than the
        shuffle would: ``parallelism`` copies of the small side against the rows of every
        side not yet partitioned on the join keys -- a 170-thousand-row build side beats
        shuffling 6 million probe rows. A side over ten times the threshold is never
        replicated: every subtask would hold all of it."""
        if rows[small] > 10 * self.threshold:
            return False
        shuffled = 0.0
        if not _key_positions(ld, node.left_keys):
            shuffled += rows["left"]
        if not _key_positions(rd, node.right_keys):
            shuffled += rows["right"]
        return rows[small] * self.parallelism < shuffled

    def _loop_join(self, node: NestedLoopJoinExec) -> Placed:
        sides = (self.visit(node.left), self.visit(node.right))
        (left, ld), (right, rd) = sides
        if ld == SINGLE and rd == SINGLE:
            return node.with_inputs((left, right)), SINGLE
        rows = {"left": node.left.est_rows, "right": node.right.est_rows}
        allowed = self._replicable(node.kind, node.null_aware)
        small = min(allowed, key=lambda s: rows[s], default=None)
        if small is not None:
            return self._broadcast(node, sides, small, node.kind)
        return node.with_inputs((_gather(left)[0], _gather(right)[0])), SINGLE

    # -- set operations -------------------------------------------------------------------

    def _set_op(self, node: SetOpExec) -> Placed:
        (left, ld), (right, rd) = self.visit(node.left), self.visit(node.right)
        if ld == SINGLE and rd == SINGLE:
            return node.with_inputs((left, right)), SINGLE
        if node.kind == "union" and node.all:
            left = _exchange(left, "rebalance") if ld == SINGLE else left
            right = _exchange(right, "rebalance") if rd == SINGLE else right
            return node.with_inputs((left, right)), ANY
        left = _hashed(left, tuple(f.ref() for f in node.left.schema))[0]
        right = _hashed(right, tuple(f.ref() for f in node.right.schema))[0]
        return node.with_inputs((left, right)), Distribution.hash(
            tuple(f.cid for f in node.fields))

