"""Continuous jobs (``INSERT INTO``) and streamed query results.

A :class:`Job` runs a :class:`Run` -- a streaming run in this process or on worker
processes, or in batch mode a :class:`BoundedRun` of the batch executor -- in a background
thread so ``Session.sql("INSERT INTO ...")`` returns at
once with a handle: ``status()``, ``cancel()``, ``wait()``, ``metrics()``, ``info()``. Job
threads are daemons and the session cancels its jobs when it closes, so no job outlives its
session.

A job's status uses Flink's job status names: RUNNING, then one of FINISHED (its inputs
ended), CANCELED or FAILED; RESTARTING while a run that recovers from failures waits to
restart. :meth:`Job.info` is the record ``SHOW JOBS`` lists: identity, status, start time,
restarts, the last completed checkpoint and the last savepoint. :meth:`Job.stop` ends a
job as Flink's stop does: with ``savepoint=True`` after a savepoint (the job is then
FINISHED), else as ``cancel``.

A :class:`ChangelogStream` is what ``Result.stream()`` iterates for a SELECT in streaming
mode: batches with an ``op`` column (``+I``, ``-U``, ``+U``, ``-D``, as in Flink's tableau
output) in front of the result columns, yielded as the job produces them. Closing the
iterator (or Ctrl-C in the CLI) stops the job and closes its operators.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from flowsql.errors import ExecutionError, FlowSQLError
from flowsql.planner.physical import PhysicalPlan
from flowsql.runtime.changelog import LABELS, materialize, row_kinds
from flowsql.runtime.executor import execute_batches

RUNNING, FINISHED, FAILED, CANCELED = "RUNNING", "FINISHED", "FAILED", "CANCELED"
RESTARTING = "RESTARTING"


class Run(Protocol):
    """What a job or a streamed result drives: a :class:`StreamingRun`, its parallel
    counterpart on worker processes, or a :class:`BoundedRun`.

    A run that checkpoints and recovers also offers ``checkpoint_summary() -> dict | None``
    (keys: ``restarts``, ``restarting``, ``last_checkpoint``, ``checkpoints_completed``,
    ``checkpoints_failed``; ``last_checkpoint`` is None or a dict with ``id``,
    ``duration_ms``, ``size_bytes``, ``alignment_ms``, ``completed_ms``; ``last_savepoint``
    is None or the location of the last savepoint). It is optional:
    a job asks for it with ``getattr`` and reads a missing method or None as "no restarts,
    no checkpoints"."""

    def batches(self) -> Iterator[pa.RecordBatch]: ...

    def cancel(self) -> None: ...

    @property
    def cancelled(self) -> bool: ...

    def metrics(self) -> list[dict[str, Any]]: ...


@dataclass(frozen=True)
class CheckpointInfo:
    """A completed checkpoint of a job, as its run reports it."""

    #: the checkpoint's number within its job
    id: int
    #: from triggering the checkpoint to the last acknowledgement
    duration_ms: int
    #: the bytes of state the checkpoint wrote
    size_bytes: int
    #: the longest time a task spent aligning barriers for it
    alignment_ms: int
    #: when it completed, epoch milliseconds
    completed_ms: int


@dataclass(frozen=True)
class JobInfo:
    """One job at one moment: what ``SHOW JOBS`` lists for it (see :meth:`Job.info`).

    A run that does not checkpoint (a batch-mode job, a streaming job without
    checkpointing) reports 0 restarts, 0 checkpoints and no ``last_checkpoint``.
    """

    #: the session-wide job number, in submission order
    id: int
    #: what the job does, e.g. ``INSERT INTO sink``
    name: str
    #: RUNNING, RESTARTING, FINISHED, FAILED or CANCELED
    status: str
    #: when the job was submitted, epoch milliseconds
    start_time_ms: int
    #: how often the job restarted after a failure
    restarts: int
    #: the latest completed checkpoint, None before the first one completes
    last_checkpoint: CheckpointInfo | None
    #: checkpoints that completed since the job started
    checkpoints_completed: int
    #: checkpoints that were aborted or timed out since the job started
    checkpoints_failed: int
    #: the location of the job's last completed savepoint, None before the first one
    last_savepoint: str | None = None


_ids = itertools.count(1)


class Job:
    """A statement running in the background; see the module docstring."""

    def __init__(self, name: str, run: Run) -> None:
        self.id = next(_ids)
        self.name = name
        #: epoch milliseconds at submission (Flink's job start time)
        self.start_time_ms = time.time_ns() // 1_000_000
        self._run = run
        self._status = RUNNING
        self._error: FlowSQLError | None = None
        self._thread = threading.Thread(target=self._main, name=f"flowsql-job-{self.id}",
                                        daemon=True)
        self._thread.start()

    def _main(self) -> None:
        try:
            for _ in self._run.batches():
                pass
            stopped = getattr(self._run, "stopped_with_savepoint", None) is not None
            self._status = CANCELED if self._run.cancelled and not stopped else FINISHED
        except FlowSQLError as exc:
            self._error, self._status = exc, FAILED
        except Exception as exc:  # a bug must still fail the job visibly, not kill a thread
            self._error = ExecutionError(f"job {self.id} failed: {type(exc).__name__}: {exc}")
            self._status = FAILED

    def status(self) -> str:
        """RUNNING, RESTARTING, FINISHED, FAILED or CANCELED (see the module docstring)."""
        return self._status_given(self.checkpoint_summary())

    def info(self) -> JobInfo:
        """The job's identity, status, start time, restarts and last checkpoint, read
        together from one summary of its run so they agree with each other."""
        summary = self.checkpoint_summary()
        if summary is None:
            return JobInfo(self.id, self.name, self._status_given(None), self.start_time_ms,
                           restarts=0, last_checkpoint=None, checkpoints_completed=0,
                           checkpoints_failed=0)
        last = summary["last_checkpoint"]
        checkpoint = None if last is None else CheckpointInfo(
            int(last["id"]), int(last["duration_ms"]), int(last["size_bytes"]),
            int(last["alignment_ms"]), int(last["completed_ms"]))
        return JobInfo(self.id, self.name, self._status_given(summary), self.start_time_ms,
                       restarts=int(summary["restarts"]), last_checkpoint=checkpoint,
                       checkpoints_completed=int(summary["checkpoints_completed"]),
                       checkpoints_failed=int(summary["checkpoints_failed"]),
                       last_savepoint=summary.get("last_savepoint"))

    def checkpoint_summary(self) -> dict[str, Any] | None:
        """The run's checkpointing figures (None for a run that does not checkpoint):
        ``restarts``, ``restarting``, ``checkpoints_completed``, ``checkpoints_failed``,
        ``last_checkpoint`` (id, kind, duration_ms, size_bytes, alignment_ms,
        completed_ms, path), ``last_savepoint``, ``average_duration_ms``,
        ``average_size_bytes``, the job's checkpoint ``job_id`` and ``checkpoint_dir``."""
        summarize = getattr(self._run, "checkpoint_summary", None)
        return None if summarize is None else summarize()

    def _status_given(self, summary: dict[str, Any] | None) -> str:
        """An ended job's final status wins over what its run last reported; a live job
        is RESTARTING while its run waits to restart, else RUNNING."""
        status = self._status
        if status == RUNNING and summary is not None and summary["restarting"]:
            return RESTARTING
        return status

    def cancel(self) -> None:
        self._run.cancel()

    def stop(self, savepoint: bool = False, directory: str | None = None,
             drain: bool = False, timeout: float | None = 60.0) -> str | None:
        """End the job as Flink's stop does and return the savepoint's location (None
        without one). ``savepoint``: take a savepoint into a new directory under
        ``directory`` (default ``execution.checkpointing.savepoint-dir``), let the sinks
        commit what it covers, end the job (FINISHED); when the savepoint cannot be taken
        this raises and the job keeps running. ``drain``: first end the sources as if
        their input ended, so every window fires; the job then ends as a bounded job does
        (its final checkpoint is the savepoint). Neither: as ``cancel`` (a final
        checkpoint when the job checkpoints). Waits up to ``timeout`` seconds for the job
        to end."""
        if directory is not None and not savepoint:
            raise ExecutionError("a savepoint directory is given but no savepoint asked")
        if not savepoint and not drain:
            self.cancel()
            self.join(timeout)
            return None
        what = "take a savepoint" if savepoint else "be drained"
        if isinstance(self._run, BoundedRun):
            raise ExecutionError(f"job {self.id} cannot {what}: it runs in batch mode")
        if not hasattr(self._run, "stop_with_savepoint"):
            raise ExecutionError(f"job {self.id} cannot {what}: that needs checkpointing "
                                 "(set 'execution.checkpointing.interval' before the job "
                                 "starts)")
        if self._status != RUNNING:
            raise ExecutionError(f"job {self.id} is {self._status}: only a running job "
                                 "can be stopped")
        if drain:
            location: str | None = self._run.stop_with_drain(  # type: ignore[attr-defined]
                savepoint, directory)
        else:
            location = self._run.stop_with_savepoint(directory)  # type: ignore[attr-defined]
        self.join(timeout)
        return location

    def wait(self, timeout: float | None = None) -> str:
        """Block until the job ends (or ``timeout`` seconds pass); a failed job raises its
        error. Returns the status."""
        self._thread.join(timeout)
        if self._error is not None:
            raise self._error
        return self.status()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the job's thread without raising its error."""
        self._thread.join(timeout)

    def metrics(self) -> list[dict[str, Any]]:
        """Per operator: records in/out, current watermark, late records dropped, ..."""
        return self._run.metrics()

    def __repr__(self) -> str:
        return f"Job({self.id}, {self.name!r}, {self.status()})"


class BoundedRun:
    """A batch-mode plan (runtime-mode ``batch``) run as a job: the batch executor, with
    cancellation between batches. It has no per-operator metrics."""

    def __init__(self, plan: PhysicalPlan, settings: dict[str, str]) -> None:
        self.plan = plan
        self._settings = settings
        self._cancelled = threading.Event()

    def batches(self) -> Iterator[pa.RecordBatch]:
        produced = execute_batches(self.plan, self._settings)
        try:
            for batch in produced:
                yield batch
                if self._cancelled.is_set():
                    return
        finally:
            produced.close()  # type: ignore[attr-defined]

    def cancel(self) -> None:
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def metrics(self) -> list[dict[str, Any]]:
        return []


class ChangelogStream:
    """The changelog of a streaming SELECT (see the module docstring)."""

    def __init__(self, make_run: Callable[[], Run], schema: pa.Schema,
                 bounded: bool) -> None:
        self._make_run = make_run
        self.schema = schema
        self.bounded = bounded
        self.run: Run | None = None

    def batches(self) -> Iterator[pa.RecordBatch]:
        """Raw output: plan columns (+ the row kinds of an updating result); every
        iteration is a new run of the query."""
        self.run = self._make_run()
        yield from self.run.batches()

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        width = len(self.schema)
        out_schema = pa.schema([pa.field("op", pa.string(), nullable=False), *self.schema])
        labels = np.array(LABELS, dtype=object)
        for batch in self.batches():
            ops = pa.array(labels[row_kinds(batch, width)], pa.string())
            columns = [batch.column(i) for i in range(width)]
            yield pa.RecordBatch.from_arrays([ops, *columns], schema=out_schema)

    def final(self) -> pa.Table:
        """Run to the end and apply the changelog: the rows the result ends with."""
        if not self.bounded:
            raise ExecutionError("the query reads an unbounded table, so it has no final "
                                 "result; iterate Result.stream(), or write it to a table "
                                 "with INSERT INTO")
        return materialize(self.batches(), self.schema)

    def cancel(self) -> None:
        if self.run is not None:
            self.run.cancel()
