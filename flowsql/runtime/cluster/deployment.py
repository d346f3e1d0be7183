"""What a job is to the cluster: tasks, the channels between them, and where each runs.

``TaskSpec`` and ``EdgeSpec`` are what a caller submits; ``plan_deployment`` turns them into
one JSON-able descriptor per task, the only thing a worker ever receives. A descriptor names
its channels (unique within the job), the address of the worker that owns each output's
receiving end, and its task kind by name — so a deployment is data, never code.

Edges are point to point (one channel each); an edge's position among the edges that leave
(enter) a task is the task's output (input) number, which is how a hash edge's
``split_batch_by_subtask`` result lines up with the receivers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from flowsql.errors import ExecutionError
from flowsql.runtime.channels import ChannelSettings
from flowsql.runtime.cluster.tasks import check_task_kind


@dataclass(frozen=True)
class TaskSpec:
    """One subtask: ``kind`` names what it runs (see tasks.TASK_KINDS), ``config`` is JSON,
    ``worker`` pins it to a worker index (default: round-robin in submission order)."""

    name: str
    kind: str
    subtask: int = 0
    config: Mapping[str, Any] = field(default_factory=dict)
    worker: int | None = None

    @property
    def task_id(self) -> str:
        return f"{self.name}[{self.subtask}]"


@dataclass(frozen=True)
class EdgeSpec:
    """A channel from one subtask to another, by task id (``name[subtask]``)."""

    source: str
    target: str


def plan_deployment(job: str, tasks: Sequence[TaskSpec], edges: Sequence[EdgeSpec],
                    data_addresses: Sequence[tuple[str, int]],
                    settings: Mapping[str, str]) -> list[tuple[int, dict[str, Any]]]:
    """``(worker index, descriptor)`` for every task, in submission order."""
    if not tasks:
        raise ExecutionError("a job needs at least one task")
    ChannelSettings.from_settings(settings)  # reject bad settings before anything runs
    placement: dict[str, int] = {}
    for position, task in enumerate(tasks):
        check_task_kind(task.kind)
        if task.task_id in placement:
            raise ExecutionError(f"task {task.task_id} appears twice in the job")
        worker = position % len(data_addresses) if task.worker is None else task.worker
        if not 0 <= worker < len(data_addresses):
            raise ExecutionError(f"task {task.task_id} is placed on worker {worker}, but the "
                                 f"cluster has {len(data_addresses)} workers")
        placement[task.task_id] = worker
    inputs: dict[str, list[str]] = {task_id: [] for task_id in placement}
    outputs: dict[str, list[dict[str, Any]]] = {task_id: [] for task_id in placement}
    for number, edge in enumerate(edges):
        for end in (edge.source, edge.target):
            if end not in placement:
                raise ExecutionError(f"edge {edge.source} -> {edge.target} names unknown task "
                                     f"{end}")
        channel = f"{job}/{number}/{edge.source}->{edge.target}"
        host, port = data_addresses[placement[edge.target]]
        inputs[edge.target].append(channel)
        outputs[edge.source].append({"channel": channel, "host": host, "port": port})
    return [(placement[task.task_id],
             {"job": job, "name": task.name, "subtask": task.subtask, "kind": task.kind,
              "config": dict(task.config), "settings": dict(settings),
              "inputs": inputs[task.task_id], "outputs": outputs[task.task_id]})
            for task in tasks]
