"""Single-process execution of a physical plan: one operator per node, pulled lazily.

Each node becomes a generator of its output batches, driven by the shared pull loop
(:mod:`flowsql.runtime.pull_loop`: open, inputs in ``input_order``, close -- also when the
consumer stops early or an error unwinds the pipeline). Nothing is materialized between
operators: only blocking operators hold data, and they account it against
``execution.memory-budget``.

Errors: a :class:`FlowSQLError` raised anywhere passes through unchanged; any other
exception inside an operator hook becomes an :class:`ExecutionError` naming the operator
(node type and a short description) so the user sees which step of the plan failed.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import pyarrow as pa

from flowsql.errors import ExecutionError, FlowSQLError
from flowsql.planner.config.settings import SettingValues
from flowsql.planner.explain_analyze import OperatorActuals
from flowsql.planner.operator_ids import node_operator_ids
from flowsql.planner.physical import PhysicalPlan
from flowsql.runtime.batch_progress import ProgressCounters, ProgressTracker
from flowsql.runtime.operator import MemoryBudget, Operator, OperatorContext
from flowsql.runtime.operator_profile import Profile
from flowsql.runtime.operators.shared_subplan import SharedSubplans
from flowsql.runtime.pull_loop import pull
from flowsql.runtime.registry import create_operator, describe
from flowsql.runtime.result_table import result_table
from flowsql.runtime.spill.memory_shares import memory_consumers
from flowsql.runtime.spill.spill_space import SpillSpace, parse_tmp_dirs

_T = TypeVar("_T")


@dataclass
class _Job:
    """What all operators of one execution share."""

    settings: dict[str, str]
    memory: MemoryBudget
    spill: SpillSpace
    next_id: int = 0
    #: per-operator rows and time (EXPLAIN ANALYZE); None on a normal run, which then
    #: pays nothing for it
    profile: Profile | None = None
    #: the outputs of the plan's shared subplans, each computed once
    shared: SharedSubplans | None = None
    #: live rows and ends per operator (the shell's progress line); None when the run
    #: is not tracked, which then pays nothing for it
    progress: ProgressCounters | None = None
    #: operator ids by ``id(node)``, set with ``progress``
    names: dict[int, str] | None = None


def _job(settings: dict[str, str], plan: PhysicalPlan | None = None) -> _Job:
    """The job of a run of ``plan``; without a plan (the streaming executor, whose plans
    share no subplans) there are no shared subplans."""
    values = SettingValues(settings)
    values.integer("execution.batch-size")  # checked once here, read by every operator
    budget = MemoryBudget(values.memory_size("execution.memory-budget"),
                          1 if plan is None else memory_consumers(plan))
    job = _Job(dict(settings), budget,
               SpillSpace(parse_tmp_dirs(settings.get("io.tmp.dirs"))))
    if plan is not None:
        job.shared = SharedSubplans(plan, lambda node: _run(node, job))
    return job


def _guarded(label: str, fn: Callable[..., _T], *args: Any) -> _T:
    """Run one operator hook, turning unexpected exceptions into ExecutionError."""
    try:
        return fn(*args)
    except FlowSQLError:
        raise
    except Exception as exc:
        raise ExecutionError(f"{label} failed: {type(exc).__name__}: {exc}") from exc


def _run(node: PhysicalPlan, job: _Job) -> Generator[pa.RecordBatch, None, None]:
    job.next_id += 1
    label = f"{describe(node)} [operator {job.next_id}]"
    operator: Operator = _guarded(label, create_operator, node)
    context = OperatorContext(name=label, settings=job.settings, memory=job.memory,
                              spill=job.spill, shared_subplans=job.shared)
    batches = pull(node, operator, context, _guarded, lambda child: _run(child, job))
    if job.progress is not None and job.names is not None and id(node) in job.names:
        batches = job.progress.counted(job.names[id(node)], batches)
    yield from (batches if job.profile is None
                else job.profile.timed(node, batches, context.metrics))


def execute_batches(plan: PhysicalPlan, settings: dict[str, str],
                    progress: ProgressTracker | None = None) -> Iterator[pa.RecordBatch]:
    """The plan's output as batches whose columns follow ``plan.schema`` by position;
    ``progress`` (optional) counts every operator's rows and end as the run goes on."""
    job = _job(settings, plan)
    if progress is not None:
        job.progress, job.names = progress.counters, node_operator_ids(plan)
    return _cleaned_up(_run(plan, job), job)


def _cleaned_up(batches: Iterator[pa.RecordBatch], job: _Job
                ) -> Generator[pa.RecordBatch, None, None]:
    """``batches``, then the job's spill files removed: at the end, on failure, or when
    the consumer closes the generator early (a LIMIT, a cancel)."""
    try:
        yield from batches
    finally:
        job.spill.cleanup()


def execute(plan: PhysicalPlan, settings: dict[str, str],
            progress: ProgressTracker | None = None) -> pa.Table:
    """Run the plan to completion; columns are named by the plan schema (duplicates
    allowed) and typed by it. ``progress``: see :func:`execute_batches`."""
    return result_table(plan, list(execute_batches(plan, settings, progress)))


def execute_profiled(plan: PhysicalPlan, settings: dict[str, str]
                     ) -> tuple[pa.Table, dict[str, OperatorActuals]]:
    """``execute``, plus every operator's rows and own time by operator id (EXPLAIN
    ANALYZE; see :mod:`flowsql.runtime.operator_profile`)."""
    job = _job(settings, plan)
    job.profile = Profile()
    table = result_table(plan, list(_cleaned_up(_run(plan, job), job)))
    return table, job.profile.actuals(plan, node_operator_ids(plan))
