"""A shared subplan's output, computed once and read by each of its consumers.

``optimizer/share_subplans`` replaces identical subtrees by one :class:`SharedSubplanExec`
and :class:`ReuseSubplanExec` leaves with the same ``share_id``. Both run as
:class:`SharedSubplanOperator`, a source reading the subplan's buffered output from the
job's :class:`SharedSubplans` (``OperatorContext.shared_subplans``; one per job in the
single-process executor, one per subtask in a parallel stage).

Whichever consumer is pulled first runs the subplan to its end (through the runner's own
pull loop, so its operators are guarded and profiled like any other) and buffers it; every
consumer then reads the whole buffer, in the order the subplan produced it. Consumers may
run in any order: a hash join's build side may be the reuse and its probe side the shared
node. The buffer is held against ``execution.memory-budget``; when the budget is full it
goes to one spill run under ``io.tmp.dirs``, read back by each consumer. When the last
consumer closed, the memory is given back and the run deleted; a consumer that never runs
(an input a LIMIT never reached) leaves them to the end of the job, which releases its
budget and removes its spill space.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pyarrow as pa

from flowsql.errors import ExecutionError
from flowsql.planner.physical import PhysicalPlan, ReuseSubplanExec, SharedSubplanExec
from flowsql.runtime.kernels.held_memory import HeldMemory
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.contract import Source
from flowsql.runtime.spill import SpillRun, SpillWriter

#: runs a plan node through the runner's pull loop and yields its batches
RunPlan = Callable[[PhysicalPlan], Iterator[pa.RecordBatch]]


@dataclass
class _Buffer:
    """One shared subplan's output: in memory (``batches``, ``held``) or in ``run``."""

    held: HeldMemory
    batches: list[pa.RecordBatch] = field(default_factory=list)
    run: SpillRun | None = None

    def read(self) -> Iterator[pa.RecordBatch]:
        if self.run is not None:
            yield from self.run.read()
        else:
            yield from self.batches

    def release(self) -> None:
        self.batches = []
        self.held.release_all()
        if self.run is not None:
            self.run.delete()


class SharedSubplans:
    """The shared subplans of one plan run by one runner (see the module docstring).

    ``run`` builds and pulls a node's operators as the runner does for any input; the
    plan's :class:`SharedSubplanExec` nodes say what each ``share_id`` computes."""

    def __init__(self, plan: PhysicalPlan, run: RunPlan) -> None:
        self._run = run
        self._inputs: dict[int, PhysicalPlan] = {}
        self._readers: Counter[int] = Counter()
        stack = [plan]
        while stack:
            node = stack.pop()
            if isinstance(node, SharedSubplanExec):
                self._inputs[node.share_id] = node.input
            if isinstance(node, SharedSubplanExec | ReuseSubplanExec):
                self._readers[node.share_id] += 1
            stack.extend(node.inputs)
        self._buffers: dict[int, _Buffer] = {}
        #: how often each shared subplan ran (once, unless nobody read it)
        self.runs: Counter[int] = Counter()

    def read(self, share_id: int, context: OperatorContext) -> Iterator[pa.RecordBatch]:
        """The subplan's whole output; the first call runs it, accounting its buffer
        against ``context``'s budget and spilling with ``context``'s spill space."""
        buffer = self._buffers.get(share_id)
        if buffer is None:
            buffer = self._buffers[share_id] = self._materialize(share_id, context)
        yield from buffer.read()

    def finished(self, share_id: int) -> None:
        """One consumer is done reading; after the last one the buffer is released."""
        self._readers[share_id] -= 1
        buffer = self._buffers.get(share_id)
        if self._readers[share_id] <= 0 and buffer is not None:
            buffer.release()

    def _materialize(self, share_id: int, context: OperatorContext) -> _Buffer:
        plan = self._inputs.get(share_id)
        if plan is None:
            raise ExecutionError(f"shared subplan #{share_id} is not in the plan")
        self.runs[share_id] += 1
        buffer = _Buffer(HeldMemory(context))
        writer: SpillWriter | None = None
        for batch in self._run(plan):
            if writer is None and buffer.held.try_hold(batch.nbytes):
                buffer.batches.append(batch)
                continue
            if writer is None:  # the budget is full: everything goes to one run, in order
                writer = SpillWriter(context.spill, batch.schema, f"shared-subplan-{share_id}",
                                     context.metrics)
                for held in buffer.batches:
                    writer.write(held)
                buffer.batches = []
                buffer.held.release_all()
            writer.write(batch)
        if writer is not None:
            buffer.run = writer.finish()
        return buffer


class SharedSubplanOperator(Source):
    """Reads shared subplan ``share_id`` (a SharedSubplanExec or a ReuseSubplanExec)."""

    def __init__(self, node: SharedSubplanExec | ReuseSubplanExec) -> None:
        self.share_id = node.share_id
        self._shared: SharedSubplans | None = None

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        if context.shared_subplans is None:
            raise ExecutionError(f"shared subplan #{self.share_id}: this runner does not "
                                 "share subplans")
        self._shared = context.shared_subplans

    def produce(self) -> Iterator[pa.RecordBatch]:
        assert self._shared is not None
        yield from self._shared.read(self.share_id, self.context)

    def close(self) -> None:
        if self._shared is not None:
            self._shared.finished(self.share_id)
            self._shared = None
