"""Table scan: read the needed columns through the connector and apply the filters."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from flowsql.planner.expressions import conjoin
from flowsql.planner.physical import TableScanExec
from flowsql.runtime.connectors.filesystem import scan
from flowsql.runtime.expressions import compile_predicate
from flowsql.runtime.kernels.batches import batch_size, make_batch
from flowsql.runtime.operators.contract import Source


class ScanOperator(Source):
    """The connector's pushdown is best effort (row-group pruning), so every filter is
    applied again, exactly, to each batch. Columns are cast to the field types (files
    may store string views or dictionaries). Bad CSV/JSON records skipped under
    ``*.ignore-parse-errors`` are counted in ``context.metrics['parse_errors_ignored']``."""

    def __init__(self, node: TableScanExec) -> None:
        self.node = node

    def produce(self) -> Iterator[pa.RecordBatch]:
        fields = self.node.fields
        predicate = conjoin(self.node.filters)
        keep = compile_predicate(predicate, fields) if predicate is not None else None
        batches = scan(self.node.table, [f.name for f in fields], list(self.node.filters),
                       batch_size(self.context.settings), self.context.metrics)
        for raw in batches:
            batch = make_batch(raw.columns, fields, raw.num_rows)
            if keep is not None:
                batch = batch.filter(keep(batch))
            if batch.num_rows:
                yield batch
