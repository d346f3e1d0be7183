"""The task kind that runs one subtask of a job-graph stage inside a worker.

The deployment config carries the stage plan as JSON (``plan_codec``), never code. The
subtask rebuilds the operators and drives them with the single-process executor's pull
loop (:mod:`flowsql.runtime.pull_loop`: inputs consumed one at a time in the operator's
``input_order``, hooks guarded so an unexpected exception becomes an ExecutionError naming
the operator), with three differences at the leaves and the root:

* a ``TableScanExec`` reads only this subtask's share (its connector's split scan);
* a ``StageInput`` reads its edge's channels from the task's input gate;
* the root's batches go to the outgoing edge's :class:`Partitioner`, or, for the root stage
  of the job, over one extra channel to the coordinator (``result`` in the config).

Config keys: ``plan``, ``stage``, ``parallelism``, ``inputs`` (``[edge id, number of
sending subtasks]`` in edge order, matching the order of the task's input channels),
``outputs`` (per output edge ``{kind, keys, max_parallelism, receivers, columns}``, in
edge order; the task's output channels are split among them in that order) and ``result`` (``{channel, host,
port}`` or None); optionally ``profile`` (true: the subtask also reports each operator's
rows and own time, for EXPLAIN ANALYZE; see :mod:`flowsql.runtime.operator_profile`) and
``progress`` (true: the subtask reports its operators' rows so far and which finished,
every ``REPORT_S`` seconds and in its result, for the shell's progress line; see
:mod:`flowsql.runtime.batch_progress`).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Generator, Iterator, Mapping
from typing import Any, TypeVar

import pyarrow as pa

from flowsql.errors import ExecutionError, FlowSQLError
from flowsql.planner.config.settings import SettingValues
from flowsql.planner.physical import PhysicalPlan, TableScanExec
from flowsql.runtime.batch_progress import REPORT_S, ProgressCounters
from flowsql.runtime.channels import (
    BufferedWriter,
    ChannelError,
    ChannelSettings,
    RemoteOutputChannel,
)
from flowsql.runtime.cluster.tasks import TaskContext
from flowsql.runtime.connectors.implementations import split_scan_operator
from flowsql.runtime.events import CheckpointBarrier, SenderIdle, Watermark
from flowsql.runtime.jobgraph import StageInput
from flowsql.runtime.operator import MemoryBudget, Operator, OperatorContext
from flowsql.runtime.operator_profile import Profile, preorder
from flowsql.runtime.operators.shared_subplan import SharedSubplans
from flowsql.runtime.parallel.exchange_source import ExchangeSource, drain
from flowsql.runtime.parallel.partitioner import Partitioner
from flowsql.runtime.parallel.plan_codec import loads
from flowsql.runtime.pull_loop import pull
from flowsql.runtime.registry import create_operator, describe
from flowsql.runtime.spill.memory_shares import memory_consumers
from flowsql.runtime.spill.spill_space import SpillSpace, parse_tmp_dirs

_T = TypeVar("_T")


def run_stage(context: TaskContext) -> Mapping[str, Any]:
    """Run the subtask to the end of its input; report the rows it emitted (and, when
    profiled, its operators' figures under ``operators``)."""
    config = context.config
    plan: PhysicalPlan = loads(config["plan"])
    settings = dict(context.settings)
    parallelism = int(config["parallelism"])
    sink = StageOutput(context, plan)
    spill = SpillSpace(parse_tmp_dirs(settings.get("io.tmp.dirs")), tag=f"task{context.subtask}")
    try:
        budget = SettingValues(settings).memory_size("execution.memory-budget")
        pipeline = _Pipeline(context, settings, parallelism, MemoryBudget(budget, memory_consumers(plan, stop_at_exchanges=True)),
                             spill)
        pipeline.shared = SharedSubplans(plan, pipeline.run)
        if config.get("profile"):
            pipeline.profile = Profile()
        if config.get("progress"):
            pipeline.progress = ProgressCounters()
            pipeline.names = dict(zip((id(n) for n in preorder(plan)),
                                      config["operator_ids"]))
        rows = 0
        with _reporting(context, pipeline.progress):
            for batch in pipeline.run(plan):
                sink.write(batch)
                rows += batch.num_rows
            drain(context.inputs, context.cancelled)
        sink.finish()
    except BaseException:
        sink.abort(f"task {context.task_id} failed")
        raise
    finally:
        spill.cleanup()
    result: dict[str, Any] = {"rows": rows}
    if pipeline.profile is not None:
        result["operators"] = pipeline.profile.report(plan, config["operator_ids"])
    if pipeline.progress is not None:
        result["progress"] = pipeline.progress.report()
    return result


@contextlib.contextmanager
def _reporting(context: TaskContext, counters: ProgressCounters | None) -> Iterator[None]:
    """While the body runs, send ``counters``' figures every ``REPORT_S`` seconds (from a
    thread: the task's thread is busy running operators)."""
    if counters is None:
        yield
        return
    done = threading.Event()

    def report() -> None:
        while not done.wait(REPORT_S):
            with contextlib.suppress(RuntimeError):  # a dict grew while it was copied
                context.report({"progress": counters.report()})

    reporter = threading.Thread(target=report, name="progress-report", daemon=True)
    reporter.start()
    try:
        yield
    finally:
        done.set()
        reporter.join()


class StageOutput:
    """Where the stage's root sends its batches: the next stage (or, for a statement
    set's shared read, the next stages: one partitioner per output edge, each given only
    the columns its edge carries) or the coordinator."""

    def __init__(self, context: TaskContext, plan: PhysicalPlan) -> None:
        config = context.config
        self.result: BufferedWriter | None = None
        self.partitioners: list[tuple[Partitioner, list[int] | None]] = []
        self._width = len(plan.schema)
        if config.get("result") is not None:
            target = config["result"]
            self.result = BufferedWriter(
                RemoteOutputChannel(target["channel"], (target["host"], int(target["port"]))),
                ChannelSettings.from_settings(context.settings))
            return
        position = 0
        for output in config["outputs"]:
            receivers = int(output["receivers"])
            writers = context.outputs[position:position + receivers]
            position += receivers
            partitioner = Partitioner(output["kind"], loads(output["keys"]), plan.schema,
                                      writers, context.subtask,
                                      int(output["max_parallelism"]))
            self.partitioners.append((partitioner, output["columns"]))

    @property
    def writers(self) -> list[BufferedWriter]:
        """Every channel to the next stages."""
        return [w for partitioner, _ in self.partitioners for w in partitioner.writers]

    def write(self, batch: pa.RecordBatch) -> None:
        if self.result is not None:
            self.result.write(batch)
        for partitioner, columns in self.partitioners:
            partitioner.write(batch if columns is None else self._select(batch, columns))

    def _select(self, batch: pa.RecordBatch, columns: list[int]) -> pa.RecordBatch:
        """The edge's columns of ``batch``, then any columns after the plan's (the row
        kinds of a changelog)."""
        positions = [*columns, *range(self._width, batch.num_columns)]
        return pa.RecordBatch.from_arrays([batch.column(i) for i in positions],
                                          names=[batch.schema.field(i).name for i in positions])

    def watermark(self, timestamp: int) -> None:
        """Event time passed ``timestamp``: every receiver hears it, after the batches
        written before it (the coordinator has no use for it)."""
        for writer in self.writers:
            writer.emit(Watermark(timestamp))

    def barrier(self, barrier: CheckpointBarrier) -> None:
        """Checkpoint barrier: every receiver gets it after the batches written before it.
        The coordinator's result channel does not take part in checkpoints."""
        for writer in self.writers:
            writer.emit(barrier)

    def idle(self) -> None:
        """This subtask has no input for now: receivers stop waiting for its watermark."""
        for writer in self.writers:
            writer.emit(SenderIdle())

    def finish(self) -> None:
        if self.result is not None:
            self.result.finish()

    def finish_all(self) -> None:
        """The end of the input: every receiver (the next stage's subtasks, or the
        coordinator) gets its EndOfInput now, not when the task returns."""
        self.finish()
        for writer in self.writers:
            writer.finish()

    def abort(self, reason: str) -> None:
        if self.result is not None:
            self.result.abort(reason)


class _Pipeline:
    """Pull-based operator tree of one subtask (see :mod:`flowsql.runtime.pull_loop`)."""

    def __init__(self, context: TaskContext, settings: dict[str, str], parallelism: int,
                 memory: MemoryBudget, spill: SpillSpace) -> None:
        self.task = context
        self.settings = settings
        self.parallelism = parallelism
        self.memory = memory
        self.spill = spill
        self.next_id = 0
        self.channels = input_channels(context.config)
        self.profile: Profile | None = None
        #: live rows and ends per operator, by ``id(node)`` -> operator id in ``names``
        self.progress: ProgressCounters | None = None
        self.names: dict[int, str] = {}
        #: the stage's shared subplans, each computed once per subtask
        self.shared: SharedSubplans | None = None

    def _operator(self, node: PhysicalPlan) -> Operator:
        if isinstance(node, StageInput):
            return ExchangeSource(self.task.inputs, self.channels[node.edge],
                                  self.task.cancelled)
        if isinstance(node, TableScanExec):
            split = split_scan_operator(node)
            if split is not None:
                return split
        return create_operator(node)

    def run(self, node: PhysicalPlan) -> Generator[pa.RecordBatch, None, None]:
        self.next_id += 1
        label = (f"{describe(node)} [operator {self.next_id}] in subtask "
                 f"{self.task.subtask} of {self.parallelism} of {self.task.name}")
        operator = _guarded(label, self._operator, node)
        context = OperatorContext(name=label, settings=self.settings, memory=self.memory,
                                  spill=self.spill, subtask_index=self.task.subtask,
                                  parallelism=self.parallelism,
                                  shared_subplans=self.shared)
        batches = pull(node, operator, context, _guarded, self.run)
        if self.progress is not None and id(node) in self.names:
            batches = self.progress.counted(self.names[id(node)], batches)
        yield from (batches if self.profile is None
                    else self.profile.timed(node, batches, context.metrics))


def input_channels(config: Mapping[str, Any]) -> dict[int, list[int]]:
    """Per job edge, the indexes of its channels in the task's input gate: the config's
    ``inputs`` lists ``[edge, sending subtasks]`` in the order the channels were deployed,
    so each edge owns the next run of indexes, one per sending subtask in subtask order."""
    channels: dict[int, list[int]] = {}
    position = 0
    for edge, senders in config["inputs"]:
        channels[int(edge)] = list(range(position, position + int(senders)))
        position += int(senders)
    return channels


def _guarded(label: str, fn: Callable[..., _T], *args: Any) -> _T:
    try:
        return fn(*args)
    except ChannelError:
        raise  # a neighbour failed or the job was cancelled: not this operator's fault
    except FlowSQLError as exc:
        raise type(exc)(f"{label}: {exc}") from exc
    except Exception as exc:
        raise ExecutionError(f"{label} failed: {type(exc).__name__}: {exc}") from exc
