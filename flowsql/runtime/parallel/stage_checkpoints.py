"""The checkpointing of one streaming subtask on a worker: what its deployment says
(``checkpoint``: the job's checkpoint id, the attempt, the checkpoint to restore), the
:class:`TaskCheckpointer` over its input gate and own sources, the operator ids of its
stage, the restored state, and the messages to the coordinator (``checkpoint_ack``,
``checkpoint_decline``, ``input_ended``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from flowsql.planner.physical import PhysicalPlan
from flowsql.runtime.checkpoint.config import CheckpointSettings
from flowsql.runtime.checkpoint.task_checkpointer import (
    Acknowledgement,
    Decline,
    InputEnded,
    TaskCheckpointer,
)
from flowsql.runtime.checkpoint.task_state import RestoreSource, TaskState, restore_states
from flowsql.runtime.cluster.tasks import TaskContext
from flowsql.runtime.jobgraph import StageInput
from flowsql.runtime.parallel.stage_task import StageOutput
from flowsql.runtime.parallel.stream_inputs import GateReader


class TaskCheckpoints:
    """The checkpointing of one streaming subtask, from the deployment's ``checkpoint``
    config (``job_id``, ``attempt``, ``restore``); None when the job does not checkpoint."""

    def __init__(self, context: TaskContext, settings: CheckpointSettings | None,
                 config: Mapping[str, Any], reader: GateReader, gate_channels: int,
                 own_sources: bool, output: StageOutput) -> None:
        self.job_id = str(config["job_id"])
        self.attempt = int(config["attempt"])
        self.settings = settings
        self.restore = (RestoreSource.from_dict(config["restore"])
                        if config.get("restore") else None)
        self.checkpointer: TaskCheckpointer | None = None
        self.state: TaskState | None = None
        if settings is not None:
            self.state = TaskState(settings, self.job_id, context.subtask)
            self.checkpointer = TaskCheckpointer(
                settings.mode, gate_channels, own_sources, self.state.persist,
                lambda message: _send_report(context, message), gate=reader,
                commands=context.commands, cancelled=context.cancelled,
                before_final=output.finish_all)
            reader.on_barrier_read = self.checkpointer.gate_barrier_read

    @classmethod
    def of(cls, context: TaskContext, plan: PhysicalPlan, reader: GateReader,
           gate_channels: int, output: StageOutput) -> TaskCheckpoints | None:
        config = context.config.get("checkpoint")
        if not config:
            return None
        return cls(context, CheckpointSettings.of(context.settings), config, reader,
                   gate_channels, _has_own_sources(plan), output)

    def restored(self, plan: PhysicalPlan, context: TaskContext
                 ) -> dict[str, dict[str, pa.Table]] | None:
        if self.restore is None:
            return None
        local_dir = self.settings.rocksdb_dir if self.settings else None
        return restore_states(self.restore, context.config["operator_ids"], context.subtask,
                              int(context.config["parallelism"]), local_dir)

    def close(self) -> None:
        if self.checkpointer is not None:
            self.checkpointer.close()
        if self.state is not None:
            self.state.close()


def _has_own_sources(plan: PhysicalPlan) -> bool:
    if not plan.inputs:
        return not isinstance(plan, StageInput)
    return any(_has_own_sources(child) for child in plan.inputs)


def _send_report(context: TaskContext, message: Acknowledgement | Decline | InputEnded
                 ) -> None:
    if isinstance(message, InputEnded):
        context.send({"type": "input_ended"})
    elif isinstance(message, Acknowledgement):
        context.send({"type": "checkpoint_ack", "checkpoint": message.checkpoint_id,
                      "states": {op: state.to_dict() for op, state in message.states.items()},
                      "alignment_ms": message.alignment_ms})
    else:
        context.send({"type": "checkpoint_decline", "checkpoint": message.checkpoint_id,
                      "reason": message.reason})
