"""The check before a job starts from a savepoint: which states will be restored, which are
new, which would be dropped (``compatibility`` judges; this module gathers what it judges).

* The job's side: every operator that keeps state is built and opened the way a run opens
  it, and asked for a snapshot before it saw any record: empty tables whose schemas (and
  state metadata: migration defaults) are exactly what the running operator will declare.
  Sources and sinks are not opened (that would connect to Kafka or open files); their
  states are restored as saved.
* The savepoint's side: the schema of each state file (only the file footer is read) and
  the row counts the metadata records; a rocksdb snapshot is read to learn them.

``check_restore`` runs both, refuses the job with the verdict table when a state is
incompatible or would be dropped without ``execution.savepoint.ignore-unclaimed-state``,
and otherwise returns the verdicts for the caller to show.
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa

from flowsql.errors import ExecutionError
from flowsql.planner.config.settings import SettingValues
from flowsql.planner.operator_ids import keeps_state, node_operator_ids
from flowsql.planner.physical import PhysicalPlan, TableScanExec, ValuesExec
from flowsql.planner.physical_streaming import SinkExec
from flowsql.runtime.checkpoint.backends.rocksdb import is_rocksdb_snapshot, read_rocksdb_snapshot
from flowsql.runtime.checkpoint.compatibility import (
    SavedState,
    StateVerdict,
    judge,
    refusal,
    report_text,
)
from flowsql.runtime.checkpoint.recovery import savepoint_source
from flowsql.runtime.checkpoint.task_state import RestoreSource
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.registry import create_operator

#: setting that allows dropping saved state the job does not claim
IGNORE_UNCLAIMED = "execution.savepoint.ignore-unclaimed-state"


def check_restore(plan: PhysicalPlan, settings: Mapping[str, str]
                  ) -> list[StateVerdict] | None:
    """The verdicts for starting ``plan`` from ``execution.savepoint.path`` (None when it
    is unset); ExecutionError naming every offending state when the job must not start
    (``compatibility.report_table`` and ``report_text`` present the verdicts)."""
    source = savepoint_source(dict(settings))
    if source is None:
        return None
    verdicts = judge(declared_states(plan, settings), saved_states(source))
    ignore = SettingValues(dict(settings)).boolean(IGNORE_UNCLAIMED)
    reason = refusal(verdicts, ignore)
    if reason is not None:
        raise ExecutionError(f"cannot start from savepoint "
                             f"'{settings.get('execution.savepoint.path')}': {reason}\n"
                             f"{report_text(verdicts)}")
    return verdicts


def declared_states(plan: PhysicalPlan, settings: Mapping[str, str]
                    ) -> dict[str, dict[str, pa.Schema] | None]:
    """Operator id -> state name -> schema of the empty snapshot table, for every operator
    of ``plan`` that keeps state, in plan order (None for sources and sinks)."""
    ids = node_operator_ids(plan)
    declared: dict[str, dict[str, pa.Schema] | None] = {}

    def visit(node: PhysicalPlan) -> None:
        if keeps_state(node):
            declared[ids[id(node)]] = _declared(node, ids[id(node)], settings)
        for child in node.inputs:
            visit(child)

    visit(plan)
    return declared


def saved_states(source: RestoreSource) -> dict[str, dict[str, SavedState]]:
    """Operator id -> state name -> schema and rows over all subtasks, of the snapshot
    ``source`` names."""
    storage, metadata = source.open()
    saved: dict[str, dict[str, SavedState]] = {}
    for operator in metadata.operators:
        schemas: dict[str, pa.Schema] = {}
        rows: dict[str, int] = {}
        for subtask in operator.subtasks:
            if is_rocksdb_snapshot(subtask):
                for name, table in read_rocksdb_snapshot(storage, operator.operator_id,
                                                         subtask).items():
                    schemas.setdefault(name, table.schema)
                    rows[name] = rows.get(name, 0) + table.num_rows
                continue
            for handle in subtask.files:
                if handle.state not in schemas:
                    schemas[handle.state] = storage.read_schema(handle.path)
                rows[handle.state] = rows.get(handle.state, 0) + handle.rows
        if schemas:
            saved[operator.operator_id] = {name: SavedState(schemas[name], rows[name])
                                           for name in schemas}
    return saved


def _declared(node: PhysicalPlan, operator_id: str, settings: Mapping[str, str]
              ) -> dict[str, pa.Schema] | None:
    if isinstance(node, TableScanExec | SinkExec | ValuesExec):
        return None
    operator = create_operator(node)
    operator.open(OperatorContext(name=operator_id, settings=dict(settings),
                                  checkpointing=True))
    try:
        return {name: table.schema for name, table in operator.snapshot_state(0).items()}
    finally:
        operator.close()
