"""The task kind that runs one subtask of a streaming job-graph stage inside a worker.

The stage plan is driven push-based by the same :class:`StreamingRun` that runs a whole
streaming plan in one process, so operators behave identically at any parallelism. What
differs is at the stage's edges:

* leaves: a ``StageInput`` is an :class:`EdgeInput` (batches and the minimum watermark of
  the edge's sending subtasks, read through one shared :class:`GateReader`); a filesystem
  scan reads this subtask's share of the files (:class:`SplitScanOperator`); datagen and a
  watched directory split themselves by subtask index;
* the root: batches go to the outgoing edge's partitioner (or to the coordinator from the
  root stage), and each watermark leaving the root goes to every receiver after the
  batches before it -- that is what lets a downstream window fire at the same records as
  in one process.

While it runs, the subtask reports its operators' metrics to the coordinator about every
``PROGRESS_S`` seconds, and once more in its result.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from flowsql.planner.physical import PhysicalPlan, TableScanExec
from flowsql.runtime.cluster.tasks import TaskContext
from flowsql.runtime.events import Watermark
from flowsql.runtime.jobgraph import StageInput
from flowsql.runtime.operator import Operator
from flowsql.runtime.parallel.plan_codec import loads
from flowsql.runtime.parallel.split_scan import SplitScanOperator
from flowsql.runtime.parallel.stage_task import StageOutput
from flowsql.runtime.parallel.stream_inputs import EdgeInput, GateReader
from flowsql.runtime.registry import create_operator
from flowsql.runtime.streaming.executor import StreamingRun

#: seconds between two progress reports of a running subtask
PROGRESS_S = 0.5


def run_streaming_stage(context: TaskContext) -> Mapping[str, Any]:
    """Run the subtask until its sources end (or the job is cancelled)."""
    config = context.config
    plan: PhysicalPlan = loads(config["plan"])
    parallelism = int(config["parallelism"])
    senders: dict[int, int] = {}
    channels: dict[int, list[int]] = {}
    position = 0
    for edge, count in config["inputs"]:
        senders[int(edge)] = int(count)
        channels[int(edge)] = list(range(position, position + int(count)))
        position += int(count)
    reader = GateReader(context.inputs, channels, context.cancelled)

    def operator(node: PhysicalPlan) -> Operator:
        if isinstance(node, StageInput):
            return EdgeInput(reader, node.edge, senders[node.edge])
        if (isinstance(node, TableScanExec) and node.table.connector == "filesystem"
                and "source.monitor-interval" not in node.table.options):
            return SplitScanOperator(node)
        return create_operator(node)

    output = StageOutput(context, plan)
    run = StreamingRun(plan, dict(context.settings), operators=operator,
                       subtask_index=context.subtask, parallelism=parallelism,
                       where=f" in subtask {context.subtask} of {parallelism} of {context.name}",
                       cancelled=context.cancelled)
    done = threading.Event()
    threading.Thread(target=_report_progress, args=(context, run, done), daemon=True,
                     name=f"progress {context.task_id}").start()
    try:
        for element in run.elements():
            if isinstance(element, pa.RecordBatch):
                output.write(element)
            elif isinstance(element, Watermark):
                output.watermark(element.timestamp)
        if not context.cancelled.is_set():
            output.finish()
    except BaseException:
        output.abort(f"task {context.task_id} failed")
        raise
    finally:
        done.set()
    return {"metrics": run.metrics()}


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
