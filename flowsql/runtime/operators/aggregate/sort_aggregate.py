"""Sort aggregate: GROUP BY over input sorted on its group keys, one group open at a time.

Each batch is reduced to the aggregation's columns exactly as the hash aggregate does
(group keys, one argument per aggregate with its FILTER applied), and the rows where a new
group begins are found by comparing each row's keys with the previous row's (NULL equals
NULL and NaN equals NaN here, as in grouping). Every group but the batch's last is then
complete -- the input is sorted, so a group never comes back -- and is aggregated at once
by the hash aggregate's own machinery over a group-number column (so DISTINCT and FILTER
behave identically); the last group stays open and is carried into the next batch, and
emitted at the end of the input. The output follows the groups' order.

Without group keys the whole input is one group: exactly one row, as the hash aggregate.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.planner.physical import SortAggregateExec
from flowsql.runtime.kernels.batches import (
    batch_nbytes,
    batch_size,
    positional,
    table_to_batches,
)
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.aggregate.hash_aggregate import HashAggregateOperator

#: the group-number column the complete groups are aggregated by
_GROUP = "group_number"


class SortAggregateOperator(HashAggregateOperator):
    """Holds the rows of the open group only (accounted against the memory budget)."""

    def __init__(self, node: SortAggregateExec) -> None:
        super().__init__(node)

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        self._open_group: pa.Table | None = None
        self._keys = [f"g{i}" for i in range(len(self.node.group_exprs))]

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        if not self._keys:
            return super().process_batch(input, batch)
        part = pa.Table.from_batches([self._reduced(batch)])
        if not part.num_rows:
            return ()
        starts = self._new_groups(part)
        begun = np.flatnonzero(starts)
        carried = self._open_group
        if not len(begun):  # the whole batch continues the open group
            assert carried is not None
            self._hold(pa.concat_tables([carried, part]))
            return ()
        last = int(begun[-1])
        number = np.cumsum(starts[:last]) - (0 if carried is not None else 1)
        complete = part.slice(0, last)
        if carried is not None:
            complete = pa.concat_tables([carried, complete])
            number = np.concatenate([np.zeros(carried.num_rows, dtype=np.int64), number])
        self._hold(part.slice(last))
        return self._groups_of(complete, number)

    def end_input(self, input: int) -> Iterable[pa.RecordBatch]:
        if not self._keys:
            return super().end_input(input)
        carried, self._open_group = self._open_group, None
        self._memory.release_all()
        if carried is None:
            return ()
        return self._groups_of(carried, np.zeros(carried.num_rows, dtype=np.int64))

    def _hold(self, open_group: pa.Table) -> None:
        self._open_group = open_group
        self._memory.release_all()
        self._memory.hold(batch_nbytes(open_group))

    def _new_groups(self, part: pa.Table) -> np.ndarray:
        """Per row of ``part``: does it begin a group (its keys differ from the previous
        row's, the open group's last row for the first)?"""
        starts = np.zeros(part.num_rows, dtype=bool)
        carried = self._open_group
        if carried is None:
            starts[0] = True
        rows = part.num_rows
        for name in self._keys:
            column = part.column(name)
            if carried is not None:
                last = carried.column(name).slice(carried.num_rows - 1).combine_chunks()
                previous = pa.concat_arrays([last, column.slice(0, rows - 1).combine_chunks()])
                starts |= _differs(previous, column.combine_chunks())
            elif rows > 1:
                starts[1:] |= _differs(column.slice(0, rows - 1).combine_chunks(),
                                       column.slice(1).combine_chunks())
        return starts

    def _groups_of(self, rows: pa.Table, number: np.ndarray) -> list[pa.RecordBatch]:
        """Aggregate ``rows``, whose group ``number`` ascends from 0, one output row per
        group in that order."""
        firsts = pa.array(np.flatnonzero(np.diff(number, prepend=-1)))
        keys = [rows.column(k).take(firsts) for k in self._keys]
        arguments = rows.drop_columns(self._keys).append_column(_GROUP, pa.array(number))
        grouped = self._aggregate(arguments, [_GROUP], use_threads=False)
        order = grouped.column(0).to_numpy()
        if len(order) > 1 and bool(np.any(order[1:] < order[:-1])):
            grouped = grouped.take(pa.array(np.argsort(order, kind="stable")))
        table = positional([*keys, *grouped.columns[1:]], len(firsts))
        return table_to_batches(table, self.node.schema, batch_size(self.context.settings))


def _differs(before: pa.Array, after: pa.Array) -> np.ndarray:
    """Row-wise: ``after`` is another group key than ``before`` (NULL = NULL, NaN = NaN)."""
    different = pc.fill_null(pc.not_equal(before, after), False)
    null_before, null_after = pc.is_null(before), pc.is_null(after)
    different = pc.or_(different, pc.xor(null_before, null_after))
    if pa.types.is_floating(after.type):
        both_nan = pc.and_(pc.is_nan(before), pc.is_nan(after))
        different = pc.and_(different, pc.invert(pc.fill_null(both_nan, False)))
    return different.to_numpy(zero_copy_only=False)
