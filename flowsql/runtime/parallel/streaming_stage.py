"""The task kind that runs one subtask of a streaming job-graph stage inside a worker.

The stage plan is driven push-based by the same :class:`StreamingRun` that runs a whole
streaming plan in one process, so operators behave identically at any parallelism. What
differs is at the stage's edges:

* leaves: a ``StageInput`` is an :class:`EdgeInput` (batches and the minimum watermark of
  the edge's sending subtasks, read through one shared :class:`GateReader`); a scan whose
  connector splits its tables reads this subtask's share (a bounded filesystem table:
  ``SplitScanOperator``, see ``flowsql.runtime.connectors.implementations``); datagen and
  a watched directory split themselves by subtask index;
* the root: batches go to the outgoing edge's partitioner (or to the coordinator from the
  root stage), and each watermark leaving the root goes to every receiver after the
  batches before it -- that is what lets a downstream window fire at the same records as
  in one process.

With checkpointing on (a ``checkpoint`` entry in the config), the subtask takes part in
checkpoints through :class:`TaskCheckpoints`: barriers are forwarded to every receiver in
order with the batches, and the run restores its operators from the checkpoint named there.

With ``table.exec.source.idle-timeout`` set, a subtask whose sources have been silent that
long tells its receivers it is idle, so they do not wait for its watermark (``_Idleness``).

While it runs, the subtask reports its operators' metrics to the coordinator about every
``PROGRESS_S`` seconds, and once more in its result.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from flowsql.planner.physical import PhysicalPlan, TableScanExec
from flowsql.runtime.cluster.tasks import TaskContext
from flowsql.runtime.connectors.implementations import split_scan_operator
from flowsql.runtime.events import CheckpointBarrier, Watermark
from flowsql.runtime.jobgraph import StageInput
from flowsql.runtime.operator import Operator
from flowsql.runtime.parallel.plan_codec import loads
from flowsql.runtime.parallel.stage_checkpoints import TaskCheckpoints
from flowsql.runtime.parallel.stage_task import StageOutput, input_channels
from flowsql.runtime.parallel.stream_inputs import EdgeInput, GateReader
from flowsql.runtime.registry import create_operator
from flowsql.runtime.streaming.executor import StreamingRun, idle_timeout_ms

#: seconds between two progress reports of a running subtask
PROGRESS_S = 0.5


def run_streaming_stage(context: TaskContext) -> Mapping[str, Any]:
    """Run the subtask until its sources end (or the job is cancelled)."""
    config = context.config
    plan: PhysicalPlan = loads(config["plan"])
    parallelism = int(config["parallelism"])
    channels = input_channels(config)
    reader = GateReader(context.inputs, channels, context.cancelled)

    def operator(node: PhysicalPlan) -> Operator:
        if isinstance(node, StageInput):
            return EdgeInput(reader, node.edge, channels[node.edge])
        if isinstance(node, TableScanExec):
            split = split_scan_operator(node)
            if split is not None:
                return split
        return create_operator(node)

    output = StageOutput(context, plan)
    idleness = _Idleness(output, idle_timeout_ms(dict(context.settings)))
    checkpoints = TaskCheckpoints.of(context, plan, reader,
                                     sum(len(c) for c in channels.values()), output)
    run = StreamingRun(plan, dict(context.settings), operators=operator,
                       subtask_index=context.subtask, parallelism=parallelism,
                       where=f" in subtask {context.subtask} of {parallelism} of {context.name}",
                       cancelled=context.cancelled, on_idle=lambda: idleness.check(run),
                       operator_ids=config["operator_ids"],
                       job_id=checkpoints.job_id if checkpoints else "local",
                       attempt=checkpoints.attempt if checkpoints else 0,
                       checkpointing=checkpoints.checkpointer if checkpoints else None,
                       restore=checkpoints.restored(plan, context) if checkpoints else None)
    done = threading.Event()
    threading.Thread(target=_report_progress, args=(context, run, done), daemon=True,
                     name=f"progress {context.task_id}").start()
    try:
        for element in run.elements():
            idleness.sent = False  # a record or watermark makes the channels active again
            if isinstance(element, pa.RecordBatch):
                output.write(element)
            elif isinstance(element, Watermark):
                output.watermark(element.timestamp)
            elif isinstance(element, CheckpointBarrier):
                output.barrier(element)
        if not context.cancelled.is_set():
            output.finish()
    except BaseException:
        output.abort(f"task {context.task_id} failed")
        raise
    finally:
        done.set()
        if checkpoints is not None:
            checkpoints.close()
    return {"metrics": run.metrics()}


class _Idleness:
    """Flink's idle sources across an exchange: once this subtask's sources have produced
    no records for ``table.exec.source.idle-timeout``, its receivers are told
    (``SenderIdle``) so its silence does not hold back their watermarks; the next record
    or watermark it sends makes it count again."""

    def __init__(self, output: StageOutput, timeout_ms: int | None) -> None:
        self.output = output
        self.timeout_s = timeout_ms / 1000 if timeout_ms else None
        self.sent = False

    def check(self, run: StreamingRun) -> None:
        if self.timeout_s is None or self.sent:
            return
        if time.monotonic() - run.last_input >= self.timeout_s:
            self.output.idle()
            self.sent = True


def _report_progress(context: TaskContext, run: StreamingRun, done: threading.Event) -> None:
    """Send the run's metrics every PROGRESS_S seconds until ``done``. The counters are
    read while the task thread updates them: a report may be a moment old, never wrong
    by more than that; one taken while an operator added a metric is skipped."""
    while not done.wait(PROGRESS_S):
        try:
            metrics = run.metrics()
        except RuntimeError:  # a metrics dict grew while it was copied
            continue
        context.report({"metrics": metrics})
