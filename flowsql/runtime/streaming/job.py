"""Continuous jobs (``INSERT INTO``) and streamed query results.

A :class:`Job` runs a :class:`Run` -- a streaming run in this process or on worker
processes, or in batch mode a :class:`BoundedRun` of the batch executor -- in a background
thread so ``Session.sql("INSERT INTO ...")`` returns at
once with a handle: ``status()``, ``cancel()``, ``wait()``, ``metrics()``. Job threads are
daemons and the session cancels its jobs when it closes, so no job outlives its session.

A :class:`ChangelogStream` is what ``Result.stream()`` iterates for a SELECT in streaming
mode: batches with an ``op`` column (``+I``, ``-U``, ``+U``, ``-D``, as in Flink's tableau
output) in front of the result columns, yielded as the job produces them. Closing the
iterator (or Ctrl-C in the CLI) stops the job and closes its operators.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from flowsql.errors import ExecutionError, FlowSQLError
from flowsql.planner.physical import PhysicalPlan
from flowsql.runtime.changelog import LABELS, materialize, row_kinds
from flowsql.runtime.executor import execute_batches

RUNNING, FINISHED, FAILED, CANCELED = "RUNNING", "FINISHED", "FAILED", "CANCELED"


class Run(Protocol):
    """What a job or a streamed result drives: a :class:`StreamingRun`, its parallel
    counterpart on worker processes, or a :class:`BoundedRun`."""

    def batches(self) -> Iterator[pa.RecordBatch]: ...

    def cancel(self) -> None: ...

    @property
    def cancelled(self) -> bool: ...

    def metrics(self) -> list[dict[str, Any]]: ...


_ids = itertools.count(1)


class Job:
    """A statement running in the background; see the module docstring."""

    def __init__(self, name: str, run: Run) -> None:
        self.id = next(_ids)
        self.name = name
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
            self._status = CANCELED if self._run.cancelled else FINISHED
        except FlowSQLError as exc:
            self._error, self._status = exc, FAILED
        except Exception as exc:  # a bug must still fail the job visibly, not kill a thread
            self._error = ExecutionError(f"job {self.id} failed: {type(exc).__name__}: {exc}")
            self._status = FAILED

    def status(self) -> str:
        """RUNNING, FINISHED, FAILED or CANCELED."""
        return self._status

    def cancel(self) -> None:
        self._run.cancel()

    def wait(self, timeout: float | None = None) -> str:
        """Block until the job ends (or ``timeout`` seconds pass); a failed job raises its
        error. Returns the status."""
        self._thread.join(timeout)
        if self._error is not None:
            raise self._error
        return self._status

    def join(self, timeout: float | None = None) -> None:
        """Wait for the job's thread without raising its error."""
        self._thread.join(timeout)

    def metrics(self) -> list[dict[str, Any]]:
        """Per operator: records in/out, current watermark, late records dropped, ..."""
        return self._run.metrics()

    def __repr__(self) -> str:
        return f"Job({self.id}, {self.name!r}, {self._status})"


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
