"""Place exchanges in a streaming plan so it runs with ``parallelism.default`` > 1 subtasks.

The batch pass (``optimizer.distribution``) does this for bounded plans; streaming plans
add keyed stateful operators, whose state is per key and must see every change of a key
on one subtask, in order:

* group aggregate, windowed aggregate, window aggregate, Top-N / deduplication, OVER
  aggregate: hash on their keys (group keys, window bounds included for a windowed
  aggregate; window aggregate keys without the window columns; PARTITION BY keys),
  or everything on one subtask when they have none;
* a lookup join runs where its probe input runs (every subtask reads the whole looked-up
  table itself), and keeps the probe input's partitioning: its rows pass unchanged;
* regular and interval joins: both inputs hashed on corresponding keys (no broadcast: a
  replicated updating side would emit its retractions once per subtask); joins without
  equality keys run on one subtask;
* the watermark assigners (event time, and the wall clock for processing time), filters,
  projections and the window TVF run where their input runs, so watermarks are generated
  per source subtask, as in Flink, and flow through the exchanges in order with the rows;
  a sink writes where its input runs (every subtask writes its own files);
* the root hands its result to the caller from one subtask (a final gather).

A hash exchange keeps the changes of one key in one channel, hence in order. Keyed
operators promise nothing about how their output is spread (ANY), so a second keyed
operator on the same keys still gets its own exchange: simple, and always correct.
"""

from __future__ import annotations

from collections.abc import Callable

from flowsql.errors import PlanError
from flowsql.optimizer.distribution import _gather, _hashed, _Pass, parallelism
from flowsql.planner.expressions import ColumnRef, Expr
from flowsql.planner.physical import (
    PhysicalPlan,
    TableFunctionExec,
    WindowAggregateExec,
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
from flowsql.planner.properties import ANY, SINGLE, Distribution

Placed = tuple[PhysicalPlan, Distribution]


def enforce_streaming_distribution(plan: PhysicalPlan, settings: dict[str, str]
                                   ) -> PhysicalPlan:
    """The streaming plan with exchanges placed for the session's parallelism."""
    if parallelism(settings) <= 1:
        return plan
    node, delivered = _StreamingPass().visit(plan)
    return node if delivered == SINGLE else _gather(node)[0]


class _StreamingPass(_Pass):
    def __init__(self) -> None:
        super().__init__(broadcast_threshold=0)
        keyed: dict[type, Callable[[PhysicalPlan], tuple[Expr, ...]]] = {
            GroupAggregateExec: lambda n: n.group_exprs,  # type: ignore[attr-defined]
            WindowedAggregateExec: lambda n: n.group_exprs,  # type: ignore[attr-defined]
            WindowAggregateExec: lambda n: n.keys,  # type: ignore[attr-defined]
            RankExec: lambda n: n.partition_keys,  # type: ignore[attr-defined]
            OverAggregateExec: lambda n: n.partition_keys,  # type: ignore[attr-defined]
        }
        for node_type, keys in keyed.items():
            self.rules[node_type] = self._keyed(keys)
        self.rules.update({
            WatermarkAssignerExec: self._passthrough,
            ProctimeWatermarkExec: self._passthrough,
            WindowTableFunctionExec: self._passthrough,
            TableFunctionExec: self._passthrough,
            SinkExec: self._passthrough,
            LookupJoinExec: self._passthrough,
            StreamJoinExec: self._stream_join,  # type: ignore[dict-item]
            IntervalJoinExec: self._stream_join,  # type: ignore[dict-item]
            WindowJoinExec: self._stream_join,  # type: ignore[dict-item]
        })

    def visit(self, node: PhysicalPlan) -> Placed:
        if type(node) not in self.rules:
            return self._single(node) if len(node.inputs) == 1 else self._all_single(node)
        return super().visit(node)

    def _keyed(self, keys_of: Callable[[PhysicalPlan], tuple[Expr, ...]]
               ) -> Callable[[PhysicalPlan], Placed]:
        def place(node: PhysicalPlan) -> Placed:
            child, delivered = self.visit(node.inputs[0])
            keys = keys_of(node)
            if not keys:
                if delivered != SINGLE:
                    child = _gather(child)[0]
                return node.with_inputs((child,)), SINGLE
            # keyed state is filed under the key group of exactly these keys, so only a
            # hash on exactly them (or one subtask) may stand: a hash on a subset would
            # co-locate the rows but put them on subtasks that do not own their groups
            refs = tuple(k.cid for k in keys if isinstance(k, ColumnRef))
            exact = len(refs) == len(keys) and refs in delivered.keysets
            if delivered != SINGLE and not exact:
                child = _hashed(child, keys)[0]
            return node.with_inputs((child,)), ANY
        return place

    def _stream_join(self, node: StreamJoinExec | IntervalJoinExec) -> Placed:
        (left, ld), (right, rd) = self.visit(node.left), self.visit(node.right)
        if ld == SINGLE and rd == SINGLE:
            return node.with_inputs((left, right)), SINGLE
        if not node.left_keys:
            return node.with_inputs((_gather(left)[0] if ld != SINGLE else left,
                                     _gather(right)[0] if rd != SINGLE else right)), SINGLE
        for a, b in zip(node.left_keys, node.right_keys):
            if not a.dtype.equals(b.dtype):
                raise PlanError(f"distribution: join keys {a} and {b} have different types "
                                f"({a.dtype} vs {b.dtype}); they would hash differently")
        return node.with_inputs((_hashed(left, node.left_keys)[0],
                                 _hashed(right, node.right_keys)[0])), ANY

    def _all_single(self, node: PhysicalPlan) -> Placed:
        """A node without a rule of its own runs on one subtask: always correct."""
        inputs = []
        for child in node.inputs:
            placed, delivered = self.visit(child)
            inputs.append(placed if delivered == SINGLE else _gather(placed)[0])
        return node.with_inputs(tuple(inputs)), SINGLE
