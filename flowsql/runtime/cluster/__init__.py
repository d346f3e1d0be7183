"""The embedded mini-cluster: a coordinator (``MiniCluster``) in the calling process starts
worker processes, deploys JSON-described tasks to them, and fails a job fast and clearly when
a task raises or a worker dies. See coordinator.py for the guarantees."""

from flowsql.runtime.cluster.coordinator import Job, MiniCluster
from flowsql.runtime.cluster.deployment import EdgeSpec, TaskSpec
from flowsql.runtime.cluster.tasks import TASK_KINDS, TaskContext

__all__ = ["TASK_KINDS", "EdgeSpec", "Job", "MiniCluster", "TaskContext", "TaskSpec"]
