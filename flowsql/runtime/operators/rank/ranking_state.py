"""What the ranking algorithms share: the state layout, partition ids and a stable ranking.

State rows are the input rows themselves, under generated column names (``c0``, ``c1``,
...: plan names may repeat) plus one or two bookkeeping columns of the algorithm, so every
plan expression (partition keys, ORDER BY keys, window bounds) is simply evaluated again
on stored rows next to the new ones. Ranking is one stable sort of ``(partition id, ORDER
BY keys, tie-breakers)`` over stored and new rows together, and a row number is a row's
position within the run of its partition id: no Python loop per row or per partition.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.planner.expressions import Literal, SortKey
from flowsql.planner.physical_streaming import RankExec
from flowsql.planner.schema import to_arrow_schema
from flowsql.runtime.changelog import with_row_kinds
from flowsql.runtime.expressions import compile_expr
from flowsql.runtime.kernels.batches import conform, make_batch
from flowsql.runtime.kernels.ordering import sort_indices
from flowsql.runtime.kernels.row_codes import lexicographic_ids
from flowsql.runtime.state.keyed_table import KEY_GROUP

Evaluate = Callable[[pa.RecordBatch], pa.Array]

#: the sort key of a computed partition id (its expression is never evaluated)
_ASCENDING = SortKey(Literal(None, pa.int64()), True, False)
_DESCENDING = SortKey(Literal(None, pa.int64()), False, False)


def stored_data_schema(node: RankExec) -> pa.Schema:
    """The input columns under unique generated names."""
    arrow = to_arrow_schema(node.input.schema)
    return pa.schema([pa.field(f"c{i}", f.type) for i, f in enumerate(arrow)])


def compile_all(node: RankExec) -> tuple[list[Evaluate], list[Evaluate]]:
    """(partition key evaluators, ORDER BY key evaluators) over input-shaped batches."""
    schema = node.input.schema
    return ([compile_expr(e, schema) for e in node.partition_keys],
            [compile_expr(k.expr, schema) for k in node.order])


def as_batch(table: pa.Table, schema: pa.Schema) -> pa.RecordBatch:
    """The columns of ``schema`` (by name) of ``table`` as one contiguous batch."""
    columns = [conform(table.column(f.name), f.type) for f in schema]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def renamed(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """An input batch under the stored (generated) column names and types."""
    columns = [conform(c, f.type) for c, f in zip(batch.columns, schema)]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def concat_batches(first: pa.RecordBatch, second: pa.RecordBatch) -> pa.RecordBatch:
    """``first`` then ``second`` (same schema) as one contiguous batch."""
    if not first.num_rows:
        return second
    table = pa.Table.from_batches([first, second]).combine_chunks()
    return as_batch(table, first.schema)


def millis(array: pa.Array, who: str) -> np.ndarray:
    """A timestamp (or integer epoch-millisecond) column without NULLs as int64 ms."""
    if array.null_count:
        raise ExecutionError(f"{who}: {array.null_count} NULL values in a time column")
    if pa.types.is_timestamp(array.type):
        array = pc.cast(array, pa.timestamp("ms", array.type.tz), safe=False)
        array = pc.cast(array, pa.int64())
    elif not pa.types.is_integer(array.type):
        raise ExecutionError(f"{who}: a time column has type {array.type}, expected a timestamp")
    return np.asarray(array.to_numpy(zero_copy_only=False), np.int64)


def partition_ids(keys: Sequence[pa.Array], num_rows: int) -> np.ndarray:
    """One int64 per row, equal exactly when the partition keys are equal (NULL equals
    NULL, as PARTITION BY groups them); no keys: one partition."""
    codes = []
    for key in keys:
        array = conform(key, key.type)
        if pa.types.is_null(array.type):
            continue
        if pa.types.is_string_view(array.type):
            array = array.cast(pa.large_string())
        encoded = pc.dictionary_encode(array, null_encoding="encode")
        codes.append(encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64))
    if not codes:
        return np.zeros(num_rows, dtype=np.int64)
    if len(codes) == 1:
        return codes[0]
    return lexicographic_ids(codes)


def positions_in_runs(sorted_ids: np.ndarray) -> np.ndarray:
    """0-based position of every element within its run of equal adjacent ids."""
    n = len(sorted_ids)
    if not n:
        return np.empty(0, np.int64)
    starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
    return np.arange(n, dtype=np.int64) - np.repeat(starts, np.diff(np.r_[starts, n]))


def rank(ids: np.ndarray, order_keys: Sequence[pa.Array], order: Sequence[SortKey],
         tie_breakers: Sequence[tuple[np.ndarray, bool]] = ()) -> tuple[np.ndarray, np.ndarray]:
    """``(permutation, row numbers)``: rows sorted by partition id, then ``order``, then
    each ``(values, ascending)`` tie-breaker, stably; the row number (1-based) of the row
    at each sorted position within its partition."""
    keys: list[pa.Array] = [pa.array(ids, pa.int64()), *order_keys]
    specs: list[SortKey] = [_ASCENDING, *order]
    for values, ascending in tie_breakers:
        keys.append(pa.array(values, pa.int64()))
        specs.append(_ASCENDING if ascending else _DESCENDING)
    permutation = sort_indices(keys, specs, len(ids)).to_numpy().astype(np.int64)
    return permutation, positions_in_runs(ids[permutation]) + 1


def key_group_column(groups: np.ndarray) -> pa.Array:
    return pa.array(np.asarray(groups, np.int32), pa.int32())


def state_rows(groups: np.ndarray, data: pa.RecordBatch,
               extra: Sequence[tuple[str, np.ndarray]], schema: pa.Schema) -> pa.Table:
    """Rows of a keyed table state of ``schema``: key group, data columns, extra columns."""
    columns = [key_group_column(groups), *data.columns,
               *(pa.array(values, schema.field(name).type) for name, values in extra)]
    return pa.Table.from_arrays(columns, schema=schema)


def output(node: RankExec, data: pa.RecordBatch, indices: np.ndarray,
           ranks: np.ndarray | None, kinds: np.ndarray | None) -> list[pa.RecordBatch]:
    """Rows ``indices`` of ``data`` in the node's output shape: input columns, the row
    number when the plan selects it, and the row kinds when ``kinds`` is given."""
    if not len(indices):
        return []
    taken = data.take(pa.array(indices, pa.int64()))
    columns = list(taken.columns)
    if node.rank_field is not None:
        assert ranks is not None
        columns.append(pa.array(ranks, pa.int64()))
    batch = make_batch(columns, node.schema, len(indices))
    return [batch if kinds is None else with_row_kinds(batch, kinds)]


__all__ = ["KEY_GROUP", "as_batch", "compile_all", "concat_batches", "key_group_column",
           "millis", "output", "partition_ids", "positions_in_runs",
           "rank", "renamed", "state_rows", "stored_data_schema"]
