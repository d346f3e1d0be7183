"""Table sinks: where ``INSERT INTO`` rows go, one module per connector.

Contract (called by
:class:`flowsql.runtime.operators.sink.connector_sink.SinkOperator`, in this order)::

    open_sink(table, context)
    restore_state(state)   -- only when the job restores a checkpoint, before any write:
                              the tables this sink's snapshot_state returned (for a
                              rescaled job, those of every old subtask concatenated)
    ( write(batch, kinds)
    | snapshot_state(checkpoint_id) -> dict[str, pa.Table]
    | notify_checkpoint_complete(checkpoint_id) )*
    finish()               -- end of input: everything written so far becomes visible
    close()                -- always last, also after a failure or a cancel; idempotent

``write``: the batch has exactly the table's columns (names and types); kinds is None for
insert-only input, else one int8 row kind per row (changelog codes, see
flowsql.runtime.changelog). A sink emits nothing into the dataflow.

Delivery guarantees, with checkpointing on (``CheckpointSettings.of(context.settings)`` is
not None; without it nothing is snapshotted and a rerun after a failure may repeat rows):

* a sink that keeps the defaults of the three checkpoint hooks is *at-least-once*: what it
  wrote before a failure stays, and the rows the sources replay after a restore are
  written again (``print``, ``blackhole``);
* an *exactly-once* sink commits in two phases, as Flink's ``TwoPhaseCommittingSink``:
  ``snapshot_state(n)`` prepares everything written before barrier ``n`` (durable but
  invisible) and returns it as state (immutable Arrow tables, see
  ``flowsql.runtime.state``); ``notify_checkpoint_complete(n)`` makes what was prepared
  for checkpoints ``<= n`` visible -- the call may skip ids, arrive late, or never arrive
  for a failed checkpoint; ``restore_state`` commits what the restored state prepared
  (idempotently: the failed run may have committed it already) and removes what later,
  never completed work left behind; ``close`` without ``finish`` discards what no
  snapshot prepared (``filesystem``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from flowsql.errors import CatalogError
from flowsql.planner.catalog import TableEntry
from flowsql.runtime.operator import OperatorContext


class TableSink:
    """Base class with safe defaults; see the module docstring for the call order."""

    def write(self, batch: pa.RecordBatch, kinds: np.ndarray | None) -> None:
        raise NotImplementedError

    def snapshot_state(self, checkpoint_id: int) -> dict[str, pa.Table]:
        return {}

    def restore_state(self, state: dict[str, pa.Table]) -> None:
        return None

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        return None

    def finish(self) -> None:
        return None

    def close(self) -> None:
        return None


def open_sink(table: TableEntry, context: OperatorContext) -> TableSink:
    """The sink of ``table``'s connector, ready for ``write``."""
    from flowsql.runtime.connectors.implementations import IMPLEMENTATIONS, implementation

    sink = implementation(table).sink
    if sink is None:
        writable = [name for name, impl in IMPLEMENTATIONS.items() if impl.sink is not None]
        raise CatalogError(f"connector '{table.connector}' of table '{table.name}' cannot be "
                           f"written to (sinks: {', '.join(writable)})")
    return sink(table, context)
