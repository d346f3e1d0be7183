"""How a job graph becomes cluster tasks: one task per stage subtask, one edge per
(sender, receiver) pair, and the result channels the coordinator listens on.

Used for bounded jobs (``TASK_KIND``, the stage task) and streaming jobs
(``STREAMING_TASK_KIND``) alike; task kinds are module paths the workers import by name.
"""

from __future__ import annotations

from flowsql.planner.config.settings import SettingValues
from flowsql.runtime.cluster import EdgeSpec, MiniCluster, TaskSpec
from flowsql.runtime.jobgraph import JobEdge, JobGraph, StageInput
from flowsql.runtime.parallel.plan_codec import dumps

TASK_KIND = "flowsql.runtime.parallel.stage_task:run_stage"
STREAMING_TASK_KIND = "flowsql.runtime.parallel.streaming_stage:run_streaming_stage"


def deployment(graph: JobGraph, settings: dict[str, str], cluster: MiniCluster,
               result: dict[str, object], kind: str = TASK_KIND
               ) -> tuple[list[TaskSpec], list[EdgeSpec], list[str]]:
    """One TaskSpec per stage subtask, one EdgeSpec per (sender, receiver) pair, and the
    names of the result channels the coordinator must register.

    Edges are listed by job edge, then sending subtask, then receiving subtask (a
    ``forward`` edge links subtask ``i`` to subtask ``i`` only): a task's input channels
    are then grouped by edge in edge order and its output channels by output edge, each
    in receiver order, which is what ``stage_task`` relies on.

    ``result`` names the coordinator's channel (``channel``, ``host``, ``port``). When the
    root stage would only forward a gather (its plan is the exchange input alone), it is
    not deployed: the subtasks feeding it send straight to the coordinator, one channel
    each (``<channel>-<subtask>``), which spares every result row a hop."""
    workers = len(cluster.workers)
    max_parallelism = SettingValues(settings).integer("max_parallelism")
    skipped = forwarding_root(graph)
    tasks: list[TaskSpec] = []
    channels: list[str] = []
    for stage in graph.stages:
        if skipped is not None and stage.id == graph.root.id:
            continue
        to_result = not stage.outputs or stage.outputs == (skipped,)
        outputs = [] if to_result else [_output(graph.edges[e], graph, max_parallelism)
                                        for e in stage.outputs]
        inputs = [[e, graph.edges[e].senders_per_receiver(
            graph.stages[graph.edges[e].source].parallelism)] for e in stage.inputs]
        plan = dumps(stage.plan)
        for subtask in range(stage.parallelism):
            target = None
            if to_result:
                name = (f"{result['channel']}-{subtask}" if skipped is not None
                        else str(result["channel"]))
                target = {**result, "channel": name}
                channels.append(name)
            config = {"plan": plan, "stage": stage.id, "parallelism": stage.parallelism,
                      "inputs": inputs, "outputs": outputs, "result": target,
                      "operator_ids": list(stage.operator_ids)}
            tasks.append(TaskSpec(stage.name, kind, subtask, config, subtask % workers))
    edges = [EdgeSpec(f"{graph.stages[e.source].name}[{s}]",
                      f"{graph.stages[e.target].name}[{t}]")
             for e in graph.edges if e.id != skipped
             for s in range(graph.stages[e.source].parallelism)
             for t in range(graph.stages[e.target].parallelism)
             if e.kind != "forward" or s == t]
    return tasks, edges, channels


def _output(edge: JobEdge, graph: JobGraph, max_parallelism: int) -> dict[str, object]:
    """The config of one outgoing edge: how to partition, over how many of the task's
    output channels (the next ones in edge order), which columns it carries."""
    receivers = 1 if edge.kind == "forward" else graph.stages[edge.target].parallelism
    return {"kind": edge.kind, "keys": dumps(edge.keys), "max_parallelism": max_parallelism,
            "receivers": receivers,
            "columns": None if edge.columns is None else list(edge.columns)}


def forwarding_root(graph: JobGraph) -> int | None:
    """The gather edge into a root stage that does nothing but forward it, if any."""
    plan = graph.root.plan
    if isinstance(plan, StageInput) and graph.edges[plan.edge].kind == "gather":
        return plan.edge
    return None
