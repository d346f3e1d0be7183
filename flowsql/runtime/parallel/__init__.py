"""Parallel execution of bounded queries on the embedded mini-cluster.

The distribution pass (optimizer) places exchanges; ``jobgraph`` cuts the plan into stages;
``runner.ParallelRunner`` deploys every stage subtask as a ``stage_task`` on the cluster's
workers (plans travel as JSON via ``plan_codec``) and builds the result table from the
batches the root stage sends back.
"""

from flowsql.runtime.parallel.runner import ParallelRunner

__all__ = ["ParallelRunner"]
