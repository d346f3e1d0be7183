"""The progress of a query running on Spark: its stages done of those known, from Spark's
status tracker.

:func:`flowsql.spark.run.run_plan` puts the query's Spark jobs in a job group of their own
(:meth:`SparkProgress.attach`, in the thread that runs the query: PySpark keeps the group
per thread) and cancels the group when the run is interrupted. Spark plans a query's jobs
one after another (a broadcast or an adaptive stage first), so the total of stages grows
while it runs: the figure is stages completed of those planned so far. A stage Spark skips
(its output already computed) counts as done once its job has succeeded.
"""

from __future__ import annotations

import itertools
from typing import Any

from flowsql.planner.query_progress import QueryProgress

__all__ = ["SparkProgress"]

_groups = itertools.count(1)


class SparkProgress:
    """Reads the status of one query's Spark jobs; None until the query's jobs are grouped
    (Spark may still be starting)."""

    def __init__(self) -> None:
        self.group = f"flowsql-query-{next(_groups)}"
        self._context: Any = None

    def attach(self, spark: Any) -> None:
        """Put the jobs this thread starts from now on in this query's group."""
        spark.sparkContext.setJobGroup(self.group, "flowsql query", interruptOnCancel=True)
        self._context = spark.sparkContext

    def detach(self) -> None:
        """Later jobs of this thread belong to no group."""
        if self._context is not None:
            self._context.setLocalProperty("spark.jobGroup.id", None)

    def cancel(self) -> None:
        """Cancel the query's running jobs (Ctrl-C)."""
        if self._context is not None:
            self._context.cancelJobGroup(self.group)

    def snapshot(self) -> QueryProgress | None:
        if self._context is None:
            return None
        tracker = self._context.statusTracker()
        done = total = 0
        for job_id in tracker.getJobIdsForGroup(self.group):
            job = tracker.getJobInfo(job_id)
            if job is None:
                continue
            succeeded = job.status == "SUCCEEDED"
            for stage_id in job.stageIds:
                total += 1
                stage = tracker.getStageInfo(stage_id)
                if succeeded or (stage is not None and stage.numTasks > 0
                                 and stage.numCompletedTasks >= stage.numTasks):
                    done += 1
        return QueryProgress(stages_done=done, stages=total)
