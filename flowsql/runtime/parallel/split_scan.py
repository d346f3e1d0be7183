"""A table scan that reads one subtask's share of the table.

Subtask ``i`` of ``p`` reads Parquet row groups ``i, i + p, i + 2p, ...`` of the row groups
left after statistics pruning (the same list in every subtask: it depends only on the files
and the filters), so the shares are disjoint and together cover the table. CSV and JSON files
are split whole in the same way. Batches are then shaped and filtered exactly as the
single-process scan (:class:`ScanOperator`) does: the pushed filters only prune, so each
batch is filtered again, exactly.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pyarrow as pa

from flowsql.errors import DataError
from flowsql.planner.expressions import conjoin
from flowsql.planner.physical import TableScanExec
from flowsql.runtime.connectors.filesystem import data_files, normalized_schema, row_groups, scan
from flowsql.runtime.expressions import compile_predicate
from flowsql.runtime.kernels.batches import batch_size, make_batch
from flowsql.runtime.operators.contract import Source


class SplitScanOperator(Source):
    """``produce`` yields only the rows of subtask ``context.subtask_index``."""

    def __init__(self, node: TableScanExec) -> None:
        self.node = node

    def produce(self) -> Iterator[pa.RecordBatch]:
        fields = self.node.fields
        predicate = conjoin(self.node.filters)
        keep = compile_predicate(predicate, fields) if predicate is not None else None
        for raw in self._share():
            batch = make_batch(raw.columns, fields, raw.num_rows)
            if keep is not None:
                batch = batch.filter(keep(batch))
            if batch.num_rows:
                yield batch

    def _share(self) -> Iterator[pa.RecordBatch]:
        table, names = self.node.table, [f.name for f in self.node.fields]
        index, count = self.context.subtask_index, self.context.parallelism
        size = batch_size(self.context.settings)
        filters = list(self.node.filters)
        if table.format != "parquet":
            for path in data_files(table.path or "")[index::count]:
                share = dataclasses.replace(table, options={**table.options, "path": path})
                yield from scan(share, names, filters, size, self.context.metrics)
            return
        schema = normalized_schema(table.schema)
        for group in row_groups(table, filters)[index::count]:
            try:
                yield from group.to_batches(schema=schema, columns=names, batch_size=size)
            except (pa.ArrowException, OSError) as exc:
                raise DataError(f"cannot read Parquet file '{group.path}': {exc}") from None
