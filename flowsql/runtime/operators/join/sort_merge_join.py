"""Sort-merge join: an equi-join of two inputs sorted ascending, NULLS LAST, on their keys.

Both inputs arrive interleaved (the operator is :class:`Merging`: it asks for the input whose
last key is smaller), and each side's rows wait in a pending buffer. Whenever both sides
have rows, the smaller of the two sides' last keys is a *bound*: no row still to come on
either side has a key below it, so the pending rows below the bound (a prefix of each side,
found by a binary search over the sorted keys) are complete key ranges and are joined now;
the rest waits for the next round. What the operator holds is therefore the current key
range plus at most a batch of each side, not the inputs.

A round joins two sorted prefixes without a hash table: the key tuples of both prefixes
get one dense code each (the integer value itself for a single integer key, otherwise
Arrow's dense ranks over both prefixes, combined column by column), so equal codes mean
equal keys and each side's codes ascend; ``np.searchsorted`` then gives every left row
its run of equal right rows, expanded into the matching pairs ``(lid, rid)``. The
residual filters those pairs (:class:`JoinCondition`), and a left row of an outer, semi
or anti join counts as matched only through a surviving pair. A key containing NULL never
matches. Every kind is derived from the pairs as in the hash join (:mod:`join_output`).

Output order: the left input's. Inner pairs come in left order; a left or full join puts
each unmatched left row where it stands; the right rows without a match of a right or full
join (their left keys are NULL, so NULLS LAST) follow at the end of the input.

An input that is not sorted as required is an error (found per round by the codes, and
between batches by their boundary keys), never a silently wrong result.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.planner.physical import SortMergeJoinExec
from flowsql.planner.schema import Schema
from flowsql.runtime.kernels.batches import (
    batch_nbytes,
    batch_size,
    empty_batch,
    positional,
    table_to_batches,
    take_rows,
    to_table,
)
from flowsql.runtime.kernels.held_memory import HeldMemory
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.contract import Merging
from flowsql.runtime.operators.join.join_condition import JoinCondition
from flowsql.runtime.operators.join.join_output import matched, paired

_OUTER_LEFT = ("left", "full")
_OUTER_RIGHT = ("right", "full")
KINDS = ("inner", "left", "right", "full", "semi", "anti")

SortKey = tuple[tuple[Any, ...], ...]


def _sort_value(value: Any) -> tuple[Any, ...]:
    """A Python value ordered as Arrow sorts ascending with NULLS LAST: values, then NaN,
    then NULL."""
    if value is None:
        return (2,)
    if isinstance(value, float) and math.isnan(value):
        return (1,)
    return (0, value)


class _Pending:
    """One input's rows not joined yet: the data (positional table) and its key columns in
    the common key types, both in input order."""

    def __init__(self, schema: Schema, key_types: list[pa.DataType]) -> None:
        self.data = to_table([empty_batch(schema)], len(schema))
        self.keys = [pa.chunked_array([], type=t) for t in key_types]
        self.ended = False

    @property
    def rows(self) -> int:
        return self.data.num_rows

    def key_at(self, row: int) -> SortKey:
        return tuple(_sort_value(k[row].as_py()) for k in self.keys)

    def append(self, batch: pa.RecordBatch, keys: list[pa.Array]) -> None:
        table = to_table([batch], batch.num_columns)
        self.data = pa.concat_tables([self.data, table]) if self.rows else table
        self.keys = [pa.chunked_array([*old.chunks, new], type=old.type)
                     for old, new in zip(self.keys, keys)]

    def below(self, bound: SortKey) -> int:
        """How many leading rows have a key below ``bound`` (a binary search: the rows
        are sorted, so they form a prefix)."""
        low, high = 0, self.rows
        while low < high:
            middle = (low + high) // 2
            if self.key_at(middle) < bound:
                low = middle + 1
            else:
                high = middle
        return low

    def take_prefix(self, n: int) -> tuple[pa.Table, list[pa.Array]]:
        """Remove and return the first ``n`` rows and their keys (contiguous arrays)."""
        head = self.data.slice(0, n)
        keys = [k.slice(0, n).combine_chunks() for k in self.keys]
        self.data = self.data.slice(n)
        self.keys = [k.slice(n) for k in self.keys]
        return head, keys

    def nbytes(self) -> int:
        return batch_nbytes(self.data) + sum(k.nbytes for k in self.keys)


class SortMergeJoinOperator(Merging):
    """See the module docstring. Holds the pending rows of both inputs (and, for right and
    full joins, the right rows without a match until the end), accounted against the
    memory budget."""

    def __init__(self, node: SortMergeJoinExec) -> None:
        if node.kind not in KINDS:
            raise ExecutionError(f"a sort-merge join cannot compute a {node.kind} join")
        if not node.left_keys or len(node.left_keys) != len(node.right_keys):
            raise ExecutionError("a sort-merge join needs pairs of equality keys")
        self.node = node

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        node = self.node
        self._condition = JoinCondition(node.left.schema, node.right.schema, node.left_keys,
                                        node.right_keys, node.residual)
        types = self._condition.key_types
        self._sides = (_Pending(node.left.schema, types), _Pending(node.right.schema, types))
        self._right_only: list[pa.Table] = []
        self._wanted = 0
        self._memory = HeldMemory(context)
        self._batch_size = batch_size(context.settings)

    def next_input(self) -> int:
        return self._wanted

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        side = self._sides[input]
        keys = self._condition.keys(input, batch)
        if side.rows and batch.num_rows:
            previous = side.key_at(side.rows - 1)
            side.append(batch, keys)
            if side.key_at(side.rows - batch.num_rows) < previous:
                raise self._unsorted(input)
        else:
            side.append(batch, keys)
        return self._round()

    def end_input(self, input: int) -> Iterable[pa.RecordBatch]:
        self._sides[input].ended = True
        out = self._round()
        if all(s.ended for s in self._sides):
            out += self._emit_right_only()
            self._memory.release_all()
        return out

    def close(self) -> None:
        self._memory.release_all()

    # -- one round: join what is complete -------------------------------------------------

    def _round(self) -> list[pa.RecordBatch]:
        left, right = self._sides
        waiting = [i for i, s in enumerate(self._sides) if not s.ended and not s.rows]
        if waiting:  # the next key of that side is unknown: nothing is complete yet
            self._wanted = waiting[0]
            self._account()
            return []
        lasts = {i: s.key_at(s.rows - 1) for i, s in enumerate(self._sides) if not s.ended}
        if lasts:
            self._wanted = min(lasts, key=lambda i: (lasts[i], i))
            bound = lasts[self._wanted]
            cuts = left.below(bound), right.below(bound)
        else:
            cuts = left.rows, right.rows
        out: list[pa.RecordBatch] = []
        if cuts[0] or cuts[1]:
            (ltable, lkeys), (rtable, rkeys) = left.take_prefix(cuts[0]), right.take_prefix(cuts[1])
            out = self._join(ltable, lkeys, rtable, rkeys)
        self._account()
        return out

    def _account(self) -> None:
        self._memory.release_all()
        self._memory.hold(sum(s.nbytes() for s in self._sides)
                          + sum(batch_nbytes(t) for t in self._right_only))

    def _join(self, left: pa.Table, lkeys: list[pa.Array], right: pa.Table,
              rkeys: list[pa.Array]) -> list[pa.RecordBatch]:
        kind = self.node.kind
        lid, rid = self._pairs(lkeys, left.num_rows, rkeys, right.num_rows)
        lid, rid = self._condition.residual(left, right, lid, rid)
        if kind in _OUTER_RIGHT:
            lonely = np.flatnonzero(~matched(rid, right.num_rows))
            if len(lonely):
                self._right_only.append(take_rows(right, lonely))
        if kind in ("semi", "anti"):
            found = matched(lid, left.num_rows)
            keep = np.flatnonzero(found if kind == "semi" else ~found)
            return self._emit(list(take_rows(left, keep).columns), len(keep))
        if kind in _OUTER_LEFT:
            lid, rid = _with_unmatched_left(lid, rid, left.num_rows)
        rids = pa.array(rid, mask=rid < 0)
        return self._emit(paired(left, right, pa.array(lid), rids), len(lid))

    def _emit(self, columns: list[Any], rows: int) -> list[pa.RecordBatch]:
        return table_to_batches(positional(columns, rows), self.node.schema, self._batch_size)

    def _emit_right_only(self) -> list[pa.RecordBatch]:
        """The right rows that never matched, with NULL left columns (right, full)."""
        if not self._right_only:
            return []
        right = pa.concat_tables(self._right_only)
        self._right_only = []
        nulls = [pa.nulls(right.num_rows, type=f.dtype) for f in self.node.left.schema]
        return self._emit([*nulls, *right.columns], right.num_rows)

    def _unsorted(self, input: int) -> ExecutionError:
        side = "left" if input == 0 else "right"
        return ExecutionError(f"the {side} input of a sort-merge join is not sorted "
                              "ascending (NULLS LAST) on its join keys")

    # -- matching two sorted prefixes -----------------------------------------------------

    def _pairs(self, lkeys: list[pa.Array], nl: int, rkeys: list[pa.Array],
               nr: int) -> tuple[np.ndarray, np.ndarray]:
        """Pairs ``(lid, rid)`` of rows with equal keys, in left order (then right order)."""
        if not nl or not nr or any(pa.types.is_null(k.type) for k in lkeys):
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        lcodes, rcodes, lvalid = self._codes(lkeys, rkeys)
        for input, codes in enumerate((lcodes, rcodes)):
            if len(codes) > 1 and bool(np.any(codes[1:] < codes[:-1])):
                raise self._unsorted(input)
        low = np.searchsorted(rcodes, lcodes, side="left")
        counts = np.searchsorted(rcodes, lcodes, side="right") - low
        counts[~lvalid] = 0
        lid = np.repeat(np.arange(len(lcodes), dtype=np.int64), counts)
        firsts = np.cumsum(counts) - counts
        rid = np.arange(len(lid), dtype=np.int64) + np.repeat(low - firsts, counts)
        return lid, rid

    @staticmethod
    def _codes(lkeys: list[pa.Array], rkeys: list[pa.Array]
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Dense codes of both sides' key tuples (equal codes = equal keys, order kept)
        and which left rows have no NULL key. A single integer key is its own code, for the
        rows before the NULLs (which sort last and never match)."""
        nl = len(lkeys[0])
        lvalid = ~JoinCondition.null_keys(lkeys, nl)
        if len(lkeys) == 1 and pa.types.is_integer(lkeys[0].type):
            left, right = (_before_nulls(k, side) for side, k in enumerate((lkeys[0], rkeys[0])))
            lvalues = left.to_numpy()
            # NULL-key left rows (last) never match; repeating the last value keeps the
            # codes ascending
            padding = np.full(nl - len(lvalues), lvalues[-1] if len(lvalues) else 0)
            return np.concatenate([lvalues, padding]), right.to_numpy(), lvalid
        combined: np.ndarray | None = None
        for lk, rk in zip(lkeys, rkeys):
            both = pa.concat_arrays([lk, rk])
            ranks = pc.rank(both, sort_keys="ascending", tiebreaker="dense")
            codes = ranks.to_numpy().astype(np.int64)
            if combined is None:
                combined = codes
            else:
                _, dense = np.unique(combined, return_inverse=True)
                combined = dense.astype(np.int64) * (int(codes.max()) + 1) + codes
        assert combined is not None
        return combined[:nl], combined[nl:], lvalid


def _before_nulls(key: pa.Array, input: int) -> pa.Array:
    """The non-NULL values of a single sorted key column, which precede its NULLs."""
    values = key.slice(0, len(key) - key.null_count)
    if values.null_count:
        side = "left" if input == 0 else "right"
        raise ExecutionError(f"the {side} input of a sort-merge join has NULL keys before "
                             "non-NULL ones (NULLS LAST required)")
    return values


def _with_unmatched_left(lid: np.ndarray, rid: np.ndarray,
                         nl: int) -> tuple[np.ndarray, np.ndarray]:
    """The pairs plus every unmatched left row (right id -1), in left order."""
    lonely = np.flatnonzero(~matched(lid, nl))
    if not len(lonely):
        return lid, rid
    lids = np.concatenate([lid, lonely])
    rids = np.concatenate([rid, np.full(len(lonely), -1, dtype=np.int64)])
    order = np.argsort(lids, kind="stable")
    return lids[order], rids[order]
