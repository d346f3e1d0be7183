"""Physical alternatives of a join group.

A hash join (equality keys) builds either input, and runs

* on one subtask (both inputs gathered),
* partitioned: both inputs hashed on the same subset of corresponding keys -- all of
  them, each single key, or the keys a consumer above asked for (so its requirement is
  met without a second exchange);
* broadcast: a side the join kind may replicate is copied to every subtask and the other
  stays spread where it is. A NOT IN / IN join (``null_aware``) is never partitioned: one
  NULL on its right side changes the answer for every left row. A side above ten times
  ``optimizer.broadcast-threshold-rows`` is never broadcast (every subtask would hold all
  of it); below that the cost decides.

A sort-merge join (equality keys that are plain columns; not a mark or NOT IN join) asks
both inputs for their rows sorted ascending on its keys -- on one subtask, or partitioned
as the hash join's all-keys variant -- and needs no hash table; its output keeps the left
input's order, which an ORDER BY, a Top-N or a sort aggregate on the same keys above
reuses. The inputs must deliver that order themselves, unless the join's order meets an
ordering required above it: only then are sorts placed below the join, since they serve
the consumer above too (the sorts a lone merge join needs cost more than a hash table).

A nested-loop join (no equality keys) runs on one subtask or broadcasts a side it may
replicate. Never replicated: a side whose unmatched rows the join emits, since every
subtask would emit them.
"""

from __future__ import annotations

from collections.abc import Iterator

from flowsql.optimizer.search.memo import Memo
from flowsql.optimizer.search.requirements import (
    BROADCAST_INPUT,
    SINGLE_INPUT,
    SPREAD_INPUT,
    Required,
    ascending_on,
    hashed,
)
from flowsql.optimizer.search.winner import Winner
from flowsql.planner.expressions import ColumnRef, Expr
from flowsql.planner.physical import HashJoinExec, NestedLoopJoinExec, SortMergeJoinExec
from flowsql.planner.properties import ANY, SINGLE, UNORDERED, Distribution, Ordering

#: join kinds the sort-merge join runs
MERGE_KINDS = ("inner", "left", "right", "full", "semi", "anti")
#: kinds whose output is sorted on the left keys (outer rows of the right side are not)
_KEEPS_LEFT_ORDER = ("inner", "left", "semi", "anti")

#: on equal costs the first wins: the right side, as the runtime has always built it
BUILD_SIDES = ("right", "left")


def replicable(kind: str, null_aware: bool) -> tuple[str, ...]:
    """Sides a join of ``kind`` may replicate (see the module docstring)."""
    if null_aware:
        return ("right",)
    return {"inner": ("left", "right"), "right": ("left",), "full": ()}.get(kind, ("right",))


def partitioned_output(kind: str, left: Distribution, right: Distribution) -> Distribution:
    """What a partitioned join delivers: an inner join is partitioned by either side's
    keys; an outer join only by the side whose rows it keeps (NULLs fill the other)."""
    if kind == "inner":
        return Distribution.hash(*(left.keysets + right.keysets))
    return {"right": right, "full": ANY}.get(kind, left)


def broadcast_output(kind: str, side: str, other: Distribution) -> Distribution:
    """What a join delivers with ``side`` broadcast: the other side's distribution when it
    emits the other side's rows unchanged."""
    keeps = kind in ("inner", "right") if side == "left" else kind != "full"
    return other if keeps else ANY


def key_position_sets(node: HashJoinExec, required: Required) -> list[tuple[int, ...]]:
    """Subsets of key positions worth partitioning on: all, each single key, and those
    whose columns (on either side) the requirement names."""
    count = len(node.left_keys)
    sets: list[tuple[int, ...]] = [tuple(range(count))]
    if count > 1:
        sets += [(j,) for j in range(count)]
    if required.kind == "hash":
        wanted = {k.cid for k in required.keys if isinstance(k, ColumnRef)}
        asked = tuple(j for j in range(count) if _cid(node.left_keys[j]) in wanted
                      or _cid(node.right_keys[j]) in wanted)
        if asked:
            sets.append(asked)
    return list(dict.fromkeys(sets))


def _cid(key: Expr) -> int | None:
    return key.cid if isinstance(key, ColumnRef) else None


def hash_join_alternatives(memo: Memo, node: HashJoinExec, required: Required
                           ) -> Iterator[Winner]:
    costing = memo.costing
    for build in BUILD_SIDES:
        join = HashJoinExec(node.left, node.right, node.kind, node.left_keys, node.right_keys,
                            node.residual, build, node.est_rows, node.mark, node.null_aware)
        tag = f"hash join build={build}"
        left, right = memo.need(node.left, SINGLE_INPUT), memo.need(node.right, SINGLE_INPUT)
        yield costing.on_top(join.with_inputs((left.plan, right.plan)), (left, right), SINGLE,
                             f"{tag} on one subtask")
        if costing.parallelism <= 1:
            continue
        if not node.null_aware:
            for positions in key_position_sets(node, required):
                lk = tuple(node.left_keys[j] for j in positions)
                rk = tuple(node.right_keys[j] for j in positions)
                left = memo.need(node.left, hashed(lk, exact=True))
                right = memo.need(node.right, hashed(rk, exact=True))
                delivered = partitioned_output(node.kind, left.delivered, right.delivered)
                keys = ", ".join(str(k) for k in lk)
                yield costing.on_top(join.with_inputs((left.plan, right.plan)), (left, right),
                                     delivered, f"{tag} partitioned on [{keys}]")
        yield from _broadcasts(memo, join, tag)
    yield from merge_join_alternatives(memo, node, required)


def merge_join_alternatives(memo: Memo, node: HashJoinExec, required: Required
                            ) -> Iterator[Winner]:
    """The sort-merge join of an equi-join it can run (see the module docstring)."""
    left_order, right_order = ascending_on(node.left_keys), ascending_on(node.right_keys)
    if (not memo.costing.sort_based or node.mark is not None or node.null_aware
            or node.kind not in MERGE_KINDS or left_order is None or right_order is None):
        return
    costing = memo.costing
    join = SortMergeJoinExec(node.left, node.right, node.kind, node.left_keys, node.right_keys,
                             node.residual, node.est_rows)
    order = left_order if node.kind in _KEEPS_LEFT_ORDER else UNORDERED
    variants = [(SINGLE_INPUT, SINGLE_INPUT, "merge join on one subtask")]
    if costing.parallelism > 1:
        keys = ", ".join(str(k) for k in node.left_keys)
        variants.append((hashed(node.left_keys, exact=True), hashed(node.right_keys, exact=True),
                         f"merge join partitioned on [{keys}]"))
    for left_wanted, right_wanted, label in variants:
        expected = (SINGLE if left_wanted is SINGLE_INPUT else partitioned_output(
            node.kind, _hashed_on(left_order), _hashed_on(right_order)))
        may_sort = _order_serves(required, join, expected, order)
        left = memo.best(node.left, left_wanted.sorted_on(left_order, may_sort))
        right = memo.best(node.right, right_wanted.sorted_on(right_order, may_sort))
        if left is None or right is None:
            continue
        delivered = (SINGLE if left_wanted is SINGLE_INPUT
                     else partitioned_output(node.kind, left.delivered, right.delivered))
        yield costing.on_top(join.with_inputs((left.plan, right.plan)), (left, right),
                             delivered, label, order)


def _hashed_on(order: Ordering) -> Distribution:
    return Distribution.hash(tuple(k.cid for k in order.keys))


def _order_serves(required: Required, join: SortMergeJoinExec, delivered: Distribution,
                  order: Ordering) -> bool:
    """Whether the merge join's output, delivering ``delivered`` in ``order``, meets an
    ordering ``required`` above it with no exchange or sort between: then sorts placed
    below the join serve two consumers (the join and an ORDER BY, a Top-N or a sort-based
    operator above) and may be placed; otherwise only inputs that already deliver the
    keys' order qualify."""
    return (bool(required.ordering.keys) and order.satisfies(required.ordering)
            and required.met_by(join, delivered))


def nested_loop_alternatives(memo: Memo, node: NestedLoopJoinExec, required: Required
                             ) -> Iterator[Winner]:
    costing = memo.costing
    left, right = memo.need(node.left, SINGLE_INPUT), memo.need(node.right, SINGLE_INPUT)
    yield costing.on_top(node.with_inputs((left.plan, right.plan)), (left, right), SINGLE,
                         "nested loop on one subtask")
    if costing.parallelism > 1:
        yield from _broadcasts(memo, node, "nested loop")


def _broadcasts(memo: Memo, join: HashJoinExec | NestedLoopJoinExec, tag: str
                ) -> Iterator[Winner]:
    for side in replicable(join.kind, join.null_aware):
        rows = (join.left if side == "left" else join.right).est_rows
        if rows > memo.costing.broadcast_limit and not join.null_aware:
            continue
        small = memo.best(join.left if side == "left" else join.right, BROADCAST_INPUT)
        other = memo.best(join.right if side == "left" else join.left, SPREAD_INPUT)
        if small is None or other is None:
            continue
        inputs = (small, other) if side == "left" else (other, small)
        delivered = broadcast_output(join.kind, side, other.delivered)
        yield memo.costing.on_top(join.with_inputs((inputs[0].plan, inputs[1].plan)), inputs,
                                  delivered, f"{tag} broadcast {side}")
