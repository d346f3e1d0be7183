"""Sanity check of a parallel plan's exchanges: recompute what every node delivers, as the
exchange passes (``optimizer/distribution``, ``optimizer/streaming/distribution``) define
it, and check what every node requires.

A hash join needs both inputs hashed on corresponding keys (or a side it may replicate
broadcast), an aggregate and every keyed streaming operator the rows of a key on one
subtask (keyed state: hashed on exactly its keys), a sort or an unpartitioned window all
rows on one subtask, and the root its rows on one subtask. A Top-N, LIMIT or aggregate
directly below an exchange is a per-subtask partial step and needs nothing. A sort-merge join
and a sort aggregate need what a hash join and a hash aggregate need; the sorts directly
below them sort each subtask's rows (they only order, not gather), so the check looks
through them to the exchange.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import product

from flowsql.optimizer.sanity_check.naming import fail, node_name
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
    SortAggregateExec,
    SortExec,
    SortMergeJoinExec,
    TableFunctionExec,
    TableScanExec,
    TopNExec,
    ValuesExec,
    WindowAggregateExec,
    WindowExec,
    WindowTableFunctionExec,
)
from flowsql.planner.physical_streaming import (
    GroupAggregateExec,
    IntervalJoinExec,
    LookupJoinExec,
    OverAggregateExec,
    ProctimeWatermarkExec,
    RankExec,
    SinkExec,
    StreamJoinExec,
    WatermarkAssignerExec,
    WindowedAggregateExec,
    WindowJoinExec,
)
from flowsql.planner.properties import ANY, BROADCAST, SINGLE, Distribution

__all__ = ["check_distribution"]


def check_distribution(plan: PhysicalPlan) -> None:
    """Raise PlanError naming the first node whose input is not spread as it requires."""
    _DistributionCheck().root(plan)


_PASSTHROUGH: tuple[type, ...] = (FilterExec, WatermarkAssignerExec, ProctimeWatermarkExec,
                                  WindowTableFunctionExec, SinkExec, TableFunctionExec,
                                  LookupJoinExec)
_STREAM_JOINS: tuple[type, ...] = (StreamJoinExec, IntervalJoinExec, WindowJoinExec)
#: keyed streaming operators and the keys their state is filed under
_STATE_KEYS: dict[type, Callable[[PhysicalPlan], tuple[Expr, ...]]] = {
    GroupAggregateExec: lambda n: n.group_exprs,  # type: ignore[attr-defined]
    WindowedAggregateExec: lambda n: n.group_exprs,  # type: ignore[attr-defined]
    WindowAggregateExec: lambda n: n.keys,  # type: ignore[attr-defined]
    RankExec: lambda n: n.partition_keys,  # type: ignore[attr-defined]
    OverAggregateExec: lambda n: n.partition_keys,  # type: ignore[attr-defined]
}


#: operators whose input sorts (directly below them) sort per subtask
_SORTED_INPUTS: tuple[type, ...] = (SortMergeJoinExec, SortAggregateExec)


def _below_sort(node: PhysicalPlan) -> PhysicalPlan:
    """The input of a per-subtask sort, where the exchange of a sort-based operator is."""
    return node.inputs[0] if isinstance(node, SortExec) else node


def _hashed_on(node: PhysicalPlan, keys: tuple[Expr, ...]) -> bool:
    """Whether ``node`` is a hash exchange on exactly ``keys`` (expressions included)."""
    return isinstance(node, ExchangeExec) and node.kind == "hash" and node.keys == keys


def _refs(keys: tuple[Expr, ...]) -> tuple[int, ...] | None:
    """The column ids of ``keys`` when every key is a plain column, else None."""
    cids = tuple(k.cid for k in keys if isinstance(k, ColumnRef))
    return cids if len(cids) == len(keys) else None


def _renamed(delivered: Distribution, mapping: dict[int, int]) -> Distribution:
    """``delivered`` seen through a node that renames column ids; key sets using a column
    the node drops are forgotten."""
    if delivered.kind != "hash":
        return delivered
    return Distribution.hash(*(tuple(mapping[c] for c in keys) for keys in delivered.keysets
                               if all(c in mapping for c in keys)))


def _positions(delivered: Distribution, keys: tuple[Expr, ...]) -> set[tuple[int, ...]]:
    """Positions J such that ``delivered`` hashes on exactly ``keys[j] for j in J``."""
    if delivered.kind != "hash":
        return set()
    position: dict[int, int] = {}
    for index, key in enumerate(keys):
        if isinstance(key, ColumnRef):
            position.setdefault(key.cid, index)
    return {tuple(position[c] for c in keyset) for keyset in delivered.keysets
            if all(c in position for c in keyset)}


def _exchange_positions(node: PhysicalPlan, keys: tuple[Expr, ...]) -> set[tuple[int, ...]]:
    """Positions J when ``node`` is a hash exchange on ``keys[j] for j in J`` (expressions
    included, which no column-id distribution can name); every J when a key repeats."""
    if not (isinstance(node, ExchangeExec) and node.kind == "hash"):
        return set()
    choices = [[j for j, key in enumerate(keys) if key == hashed] for hashed in node.keys]
    return set(product(*choices))


def _replicable(kind: str, null_aware: bool) -> tuple[str, ...]:
    """Sides a join may replicate: never one whose unmatched rows it emits."""
    if null_aware:
        return ("right",)
    return {"inner": ("left", "right"), "right": ("left",), "full": ()}.get(kind, ("right",))


class _DistributionCheck:
    """Recomputes what each node delivers (as the exchange passes define it) and checks
    what it requires; ``path`` is the way from the root, for error messages."""

    def root(self, plan: PhysicalPlan) -> None:
        if self.visit(plan, (), under_exchange=False) != SINGLE:
            raise fail(plan, (), "is the root but its rows are spread over several "
                       "subtasks (a final gather is missing)")

    def visit(self, node: PhysicalPlan, path: tuple[str, ...], under_exchange: bool,
              per_subtask_sort: bool = False) -> Distribution:
        inner = (*path, node_name(node))
        exchange = isinstance(node, ExchangeExec)
        sorted_inputs = isinstance(node, _SORTED_INPUTS)
        inputs = [self.visit(child, inner, exchange, sorted_inputs) for child in node.inputs]
        if isinstance(node, SortExec) and per_subtask_sort:
            return inputs[0]
        if isinstance(node, TableScanExec):
            return ANY
        if isinstance(node, ValuesExec):
            return SINGLE
        if isinstance(node, ExchangeExec):
            return self._exchange(node, inputs[0])
        if isinstance(node, _PASSTHROUGH):
            return inputs[0]
        if isinstance(node, ProjectExec):
            return _renamed(inputs[0], {e.cid: f.cid for e, f in zip(node.exprs, node.fields)
                                        if isinstance(e, ColumnRef)})
        if type(node) in _STATE_KEYS:
            return self._keyed(node, _STATE_KEYS[type(node)](node), inputs[0], path)
        if isinstance(node, HashAggregateExec | SortAggregateExec):
            return self._aggregate(node, inputs[0], path, under_exchange)
        if isinstance(node, HashJoinExec | SortMergeJoinExec):
            return self._hash_join(node, inputs[0], inputs[1], path)
        if isinstance(node, NestedLoopJoinExec):
            return self._loop_join(node, inputs[0], inputs[1], path)
        if isinstance(node, _STREAM_JOINS):
            return self._stream_join(node, inputs[0], inputs[1], path)
        if isinstance(node, WindowExec):
            return self._window(node, inputs[0], path)
        if isinstance(node, SetOpExec):
            return self._set_op(node, inputs[0], inputs[1], path)
        if isinstance(node, (TopNExec, LimitExec)) and under_exchange:
            return ANY  # a per-subtask cut before the gather
        if isinstance(node, (SortExec, TopNExec, LimitExec)):
            self._require_single(node, inputs[0], path, "needs all its rows on one subtask")
            return SINGLE
        for delivered in inputs:
            self._require_single(node, delivered, path,
                                 "has no distribution rule, so must run on one subtask")
        return SINGLE

    @staticmethod
    def _require_single(node: PhysicalPlan, delivered: Distribution, path: tuple[str, ...],
                        why: str) -> None:
        if delivered != SINGLE:
            raise fail(node, path, f"{why}, but its input is {delivered}")

    @staticmethod
    def _exchange(node: ExchangeExec, delivered: Distribution) -> Distribution:
        if node.kind == "gather":
            return SINGLE
        if node.kind == "broadcast":
            return BROADCAST
        if node.kind == "hash":
            refs = _refs(node.keys)
            return Distribution.hash(refs) if refs is not None else ANY
        return delivered if node.kind == "forward" else ANY

    def _keyed(self, node: PhysicalPlan, keys: tuple[Expr, ...], delivered: Distribution,
               path: tuple[str, ...]) -> Distribution:
        """Keyed state is filed under the key group of exactly these keys: only a hash on
        exactly them, or one subtask, will do."""
        if not keys:
            self._require_single(node, delivered, path, "has no keys, so needs one subtask")
            return SINGLE
        refs = _refs(keys)
        exact = refs is not None and refs in delivered.keysets
        if delivered != SINGLE and not exact and not _hashed_on(node.inputs[0], keys):
            raise fail(node, path, f"keeps state per key but its input is {delivered}, not "
                       "hashed on exactly its keys")
        return ANY

    def _aggregate(self, node: HashAggregateExec | SortAggregateExec, delivered: Distribution,
                   path: tuple[str, ...], under_exchange: bool) -> Distribution:
        to_output = {e.cid: f.cid for e, f in zip(node.group_exprs, node.group_fields)
                     if isinstance(e, ColumnRef)}
        if delivered == SINGLE or (to_output and delivered.satisfies(
                Distribution.hash(tuple(to_output)))):
            return _renamed(delivered, to_output)
        if node.group_exprs and _hashed_on(_below_sort(node.input), node.group_exprs):
            return Distribution.hash(tuple(f.cid for f in node.group_fields))
        if under_exchange:
            return ANY  # the partial half of a split aggregate; the final half is checked
        raise fail(node, path, f"needs the rows of each group on one subtask, but its input "
                   f"is {delivered}")

    @staticmethod
    def _broadcast_side(node: HashJoinExec | NestedLoopJoinExec | SortMergeJoinExec,
                        ld: Distribution, rd: Distribution, path: tuple[str, ...]) -> str | None:
        side = "left" if ld == BROADCAST else "right" if rd == BROADCAST else None
        null_aware = not isinstance(node, SortMergeJoinExec) and node.null_aware
        if side is not None and side not in _replicable(node.kind, null_aware):
            raise fail(node, path, f"replicates its {side} input, whose unmatched rows a "
                       f"{node.kind} join emits: every subtask would emit them")
        return side

    @staticmethod
    def _after_broadcast(node: HashJoinExec | NestedLoopJoinExec | SortMergeJoinExec, side: str,
                         ld: Distribution, rd: Distribution) -> Distribution:
        other = rd if side == "left" else ld
        keeps = node.kind in ("inner", "right") if side == "left" else node.kind != "full"
        return other if keeps or other == SINGLE else ANY

    def _hash_join(self, node: HashJoinExec | SortMergeJoinExec, ld: Distribution,
                   rd: Distribution, path: tuple[str, ...]) -> Distribution:
        if ld == SINGLE and rd == SINGLE:
            return SINGLE
        side = self._broadcast_side(node, ld, rd, path)
        if side is not None:
            return self._after_broadcast(node, side, ld, rd)
        left = (_positions(ld, node.left_keys)
                | _exchange_positions(_below_sort(node.left), node.left_keys))
        right = (_positions(rd, node.right_keys)
                 | _exchange_positions(_below_sort(node.right), node.right_keys))
        if not left & right:
            raise fail(node, path, f"needs both inputs hashed on corresponding keys, but "
                       f"they are {ld} and {rd}")
        for a, b in zip(node.left_keys, node.right_keys):
            if not a.dtype.equals(b.dtype):
                raise fail(node, path, f"hashes keys of different types ({a.dtype} vs "
                           f"{b.dtype}): equal values would land on different subtasks")
        if node.kind == "inner":
            return Distribution.hash(*(ld.keysets + rd.keysets))
        return {"right": rd, "full": ANY}.get(node.kind, ld)

    def _loop_join(self, node: NestedLoopJoinExec, ld: Distribution, rd: Distribution,
                   path: tuple[str, ...]) -> Distribution:
        if ld == SINGLE and rd == SINGLE:
            return SINGLE
        side = self._broadcast_side(node, ld, rd, path)
        if side is None:
            raise fail(node, path, f"compares every pair of rows, so needs one side "
                       f"broadcast or both on one subtask, but its inputs are {ld} and {rd}")
        return self._after_broadcast(node, side, ld, rd)

    def _stream_join(self, node: PhysicalPlan, ld: Distribution, rd: Distribution,
                     path: tuple[str, ...]) -> Distribution:
        if ld == SINGLE and rd == SINGLE:
            return SINGLE
        left_keys: tuple[Expr, ...] = node.left_keys  # type: ignore[attr-defined]
        right_keys: tuple[Expr, ...] = node.right_keys  # type: ignore[attr-defined]
        if not left_keys:
            raise fail(node, path, f"has no equality keys, so needs both inputs on one "
                       f"subtask, but they are {ld} and {rd}")
        if not (_hashed_on(node.inputs[0], left_keys) and _hashed_on(node.inputs[1],
                                                                       right_keys)):
            raise fail(node, path, f"keeps both inputs in state per key, so needs both "
                       f"hashed on its keys, but they are {ld} and {rd}")
        return ANY

    def _window(self, node: WindowExec, delivered: Distribution, path: tuple[str, ...]
                ) -> Distribution:
        partitions = {call.partition_by for call in node.calls}
        keys = next(iter(partitions)) if len(partitions) == 1 else ()
        if not keys:
            self._require_single(node, delivered, path,
                                 "has no single PARTITION BY, so needs one subtask")
            return SINGLE
        refs = _refs(keys)
        together = refs is not None and delivered.satisfies(Distribution.hash(refs))
        if not together and not _hashed_on(node.input, keys):
            raise fail(node, path, f"needs each partition on one subtask, but its input is "
                       f"{delivered}")
        return delivered

    def _set_op(self, node: SetOpExec, ld: Distribution, rd: Distribution,
                path: tuple[str, ...]) -> Distribution:
        if ld == SINGLE and rd == SINGLE:
            return SINGLE
        if node.kind == "union" and node.all:
            return ANY
        for child in node.inputs:
            columns = tuple(f.cid for f in child.schema)
            if not (isinstance(child, ExchangeExec) and child.kind == "hash"
                    and _refs(child.keys) == columns):
                raise fail(node, path, "compares whole rows, so needs both inputs hashed "
                           f"on all their columns, but they are {ld} and {rd}")
        return Distribution.hash(tuple(f.cid for f in node.fields))
