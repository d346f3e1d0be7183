"""Nested-loop join: any condition, every join kind, streaming the left side.

The right input is collected first (``input_order``); each left batch is then paired with
all right rows in chunks of at most ``_PAIRS`` candidate pairs, so memory stays bounded
however large the cross product. The condition is evaluated over left fields followed by
right fields; the surviving pairs become output as in :mod:`join_output`. Right rows never
paired (right / full joins) are emitted once the left input has ended.

Null-aware mark / anti joins use the condition's three-valued result: the mark is TRUE if
some pair is TRUE, else NULL if some pair is NULL, else FALSE (SQL ``x IN (...)``).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.planner.physical import NestedLoopJoinExec
from flowsql.runtime.expressions import compile_expr, compile_predicate
from flowsql.runtime.kernels.batches import (
    batch_nbytes,
    batch_size,
    empty_batch,
    make_batch,
    positional,
    table_to_batches,
    to_table,
)
from flowsql.runtime.kernels.held_memory import HeldMemory
from flowsql.runtime.operator import Operator, OperatorContext
from flowsql.runtime.operators.join.join_output import (
    join_result,
    matched,
    paired,
    unmatched_right_rows,
)

# Candidate pairs materialized at once.
_PAIRS = 1 << 20


class NestedLoopJoinOperator(Operator):
    """Holds the right input (accounted against the memory budget); streams the left."""

    input_order = (1, 0)

    def __init__(self, node: NestedLoopJoinExec) -> None:
        self.node = node

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        node = self.node
        schema = (*node.left.schema, *node.right.schema)
        self._three_valued = node.null_aware and node.kind in ("mark", "anti")
        self._condition = None
        if node.condition is not None:
            self._condition = (compile_expr(node.condition, schema) if self._three_valued
                               else compile_predicate(node.condition, schema))
        self._right_batches: list[pa.RecordBatch] = []
        self._right: pa.Table | None = None
        self._right_matched = np.zeros(0, dtype=bool)
        self._memory = HeldMemory(context)

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        if input == 1:
            self._right_batches.append(batch)
            self._memory.hold(batch_nbytes(batch))
            return ()
        right = self._right_table()
        left = to_table([batch], len(self.node.left.schema))
        step = max(1, _PAIRS // max(right.num_rows, 1))
        out: list[pa.RecordBatch] = []
        for start in range(0, left.num_rows, step):
            out.extend(self._chunk(left.slice(start, step), right))
        return out

    def _right_table(self) -> pa.Table:
        if self._right is None:
            batches = self._right_batches or [empty_batch(self.node.right.schema)]
            self._right = to_table(batches, len(self.node.right.schema))
            self._right_matched = np.zeros(self._right.num_rows, dtype=bool)
            self._right_batches = []
        return self._right

    def _evaluate(self, left: pa.Table, right: pa.Table) -> tuple[np.ndarray, np.ndarray,
                                                                   np.ndarray]:
        """All pairs of the chunk, and per pair: condition TRUE / condition NULL."""
        lid = np.repeat(np.arange(left.num_rows), right.num_rows)
        rid = np.tile(np.arange(right.num_rows), left.num_rows)
        if self._condition is None or not len(lid):
            return lid, rid, np.ones(len(lid), dtype=bool)
        schema = (*self.node.left.schema, *self.node.right.schema)
        batch = make_batch(paired(left, right, lid, rid), schema, len(lid))
        result = self._condition(batch)
        if self._three_valued:
            unknown = result.is_null().to_numpy(zero_copy_only=False)
            true = pc.fill_null(result, False).to_numpy(zero_copy_only=False)
            return lid[true | unknown], rid[true | unknown], true[true | unknown]
        return lid, rid, result.to_numpy(zero_copy_only=False)

    def _chunk(self, left: pa.Table, right: pa.Table) -> list[pa.RecordBatch]:
        node = self.node
        lid, rid, true = self._evaluate(left, right)
        unknown_lid = lid[~true] if self._three_valued else lid[:0]
        lid, rid = lid[true], rid[true]
        size = batch_size(self.context.settings)
        if node.kind in ("inner", "left", "right", "full", "single"):
            self._right_matched[rid] = True
            columns, rows = join_result(node.kind, left, right, lid, rid, unmatched_right=False)
            return table_to_batches(positional(columns, rows), node.schema, size)
        found = matched(lid, left.num_rows)
        unknown = matched(unknown_lid, left.num_rows) & ~found
        if node.kind == "mark":
            mark = pa.array(found, mask=unknown)
            return table_to_batches(positional([*left.columns, mark], left.num_rows),
                                    node.schema, size)
        keep = found if node.kind == "semi" else ~found & ~unknown
        kept = np.flatnonzero(keep)
        return table_to_batches(positional(left.take(pa.array(kept)).columns, len(kept)),
                                node.schema, size)

    def end_input(self, input: int) -> Iterable[pa.RecordBatch]:
        if input == 1:
            self._right_table()
            return ()
        out: list[pa.RecordBatch] = []
        if self.node.kind in ("right", "full"):
            left = to_table([empty_batch(self.node.left.schema)], len(self.node.left.schema))
            columns, rows = unmatched_right_rows(left, self._right_table(), self._right_matched)
            out = table_to_batches(positional(columns, rows), self.node.schema,
                                   batch_size(self.context.settings))
        self._right = None
        self._memory.release_all()
        return out

    def close(self) -> None:
        self._memory.release_all()
