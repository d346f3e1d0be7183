"""The sending side of a job edge: which receiving subtask gets each output row.

* hash: rows go to the owner of their key group (``partitioning.split_batch_by_subtask``);
  the keys are expressions over the stage's output, evaluated per batch and appended as
  temporary columns that are dropped again before sending.
* broadcast: every receiver gets every batch (batches are immutable, so one object serves).
* rebalance: whole batches round-robin, each sender starting at its own subtask index so
  small outputs of many senders still spread.
* gather: the one receiver gets everything.
* forward: the one receiver, the subtask of the same index, gets everything (a statement
  set's shared read hands each of its consumers the rows of its own subtask).

Receivers are the writers in subtask order (the job's edges are deployed that way).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from flowsql.errors import ExecutionError
from flowsql.planner.expressions import Expr
from flowsql.planner.schema import Schema
from flowsql.runtime.channels import BufferedWriter
from flowsql.runtime.expressions import compile_expr
from flowsql.runtime.partitioning import split_batch_by_subtask


class Partitioner:
    """Routes batches of ``schema`` to ``writers`` by ``kind``."""

    def __init__(self, kind: str, keys: Sequence[Expr], schema: Schema,
                 writers: Sequence[BufferedWriter], subtask: int, max_parallelism: int) -> None:
        if kind not in ("hash", "broadcast", "rebalance", "gather", "forward"):
            raise ExecutionError(f"no partitioner for a {kind} edge")
        if kind in ("gather", "forward") and len(writers) != 1:
            raise ExecutionError(f"a {kind} edge needs one receiver, got {len(writers)}")
        self.kind = kind
        self.writers = list(writers)
        self.max_parallelism = max_parallelism
        self._keys = [compile_expr(k, schema) for k in keys]
        self._next = subtask % len(self.writers)

    def write(self, batch: pa.RecordBatch) -> None:
        if self.kind == "hash" and len(self.writers) > 1:
            width = batch.num_columns
            keyed = pa.RecordBatch.from_arrays(
                [*batch.columns, *(fn(batch) for fn in self._keys)],
                names=[f"c{i}" for i in range(width + len(self._keys))])
            parts = split_batch_by_subtask(keyed, range(width, keyed.num_columns),
                                           len(self.writers), self.max_parallelism)
            for writer, part in zip(self.writers, parts):
                if part.num_rows:
                    writer.write(pa.RecordBatch.from_arrays(part.columns[:width],
                                                            schema=batch.schema))
        elif self.kind == "broadcast":
            for writer in self.writers:
                writer.write(batch)
        else:
            self.writers[self._next].write(batch)
            self._next = (self._next + 1) % len(self.writers)
