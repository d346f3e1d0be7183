"""Table scan: read the needed columns through the connector and apply the filters.

The scan reads the table's units (``filesystem.scan_units``: Parquet row groups left after
pruning, or whole CSV/JSON files) in a fixed order, each from start to end, so its position
is exact between two batches: the units finished and the rows read so far from the current
one. The runner snapshots a source only between two batches it produced, so a restored
scan resumes right after the last batch the failed run emitted: no row twice, none lost.

State (operator list state, union-distributed: after a rescale every subtask sees every
entry and keeps those of the units it now reads):

* ``files``: every data file of the table with its size when the scan started; a restore
  over a different set of files (one gone, one new, one whose size changed) fails naming
  the file, because resuming a position in another listing would silently repeat or skip
  rows;
* ``progress``: per unit started, the file rows (before filtering) read and whether the
  unit is finished.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from flowsql.errors import ExecutionError
from flowsql.planner.expressions import conjoin
from flowsql.planner.physical import TableScanExec
from flowsql.runtime.connectors.filesystem import (
    ScanUnit,
    file_sizes,
    read_unit,
    scan_units,
    skip_rows,
)
from flowsql.runtime.expressions import compile_predicate
from flowsql.runtime.kernels.batches import batch_size, make_batch
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.contract import Source
from flowsql.runtime.operators.source.dictionary_prefilter import DictionaryPrefilter
from flowsql.runtime.operators.source.read_ahead import read_ahead
from flowsql.runtime.state.store import StateStore

_FILES = pa.schema([pa.field("path", pa.string(), nullable=False),
                    pa.field("size", pa.int64(), nullable=False)])
_PROGRESS = pa.schema([pa.field("path", pa.string(), nullable=False),
                       pa.field("row_group", pa.int64(), nullable=False),
                       pa.field("rows", pa.int64(), nullable=False),
                       pa.field("done", pa.bool_(), nullable=False)])
#: a unit's key in the progress: (path, row group id or -1)
UnitKey = tuple[str, int]


class ScanOperator(Source):
    """Parquet row groups are decoded one ahead on a background thread (``read_ahead``).
    The connector's pushdown is best effort (row-group pruning), so every filter is
    applied again, exactly, to each batch. Filters on one string column are evaluated
    first on the column's dictionary, so the strings of rows they reject are never
    decoded (``dictionary_prefilter``). Columns are cast to the field types (files
    may store string views or dictionaries). Bad CSV/JSON records skipped under
    ``*.ignore-parse-errors`` are counted in ``context.metrics['parse_errors_ignored']``.

    Reads every unit of the table; :meth:`_share` says which units this subtask reads
    (all of them here, a parallel subtask's share in ``SplitScanOperator``)."""

    def __init__(self, node: TableScanExec) -> None:
        self.node = node

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        store = StateStore.for_context(context)
        self._store = store
        self._files = store.list_state("files", _FILES, "union")
        self._progress_state = store.list_state("progress", _PROGRESS, "union")
        #: the units this subtask reads, once listed (at the start of ``produce`` or at
        #: restore); None before
        self._units: list[ScanUnit] | None = None
        #: (rows read, finished) per unit of ``_units`` started so far
        self._progress: dict[UnitKey, tuple[int, bool]] = {}

    def _share(self, units: list[ScanUnit]) -> list[ScanUnit]:
        """The units this subtask reads, in reading order."""
        return units

    # -- reading -------------------------------------------------------------------------------

    def produce(self) -> Iterator[pa.RecordBatch]:
        fields = self.node.fields
        predicate = conjoin(self.node.filters)
        keep = compile_predicate(predicate, fields) if predicate is not None else None
        names = [f.name for f in fields]
        size = batch_size(self.context.settings)
        prefilter = DictionaryPrefilter(fields, self.node.filters)
        table, metrics = self.node.table, self.context.metrics
        units = [u for u in self._list_units()
                 if not self._progress.get((u.path, u.row_group), (0, False))[1]]
        for unit, raws in read_ahead(
                units, lambda u: read_unit(table, u, names, size, metrics, prefilter.columns),
                inline=lambda u: u.row_group < 0):
            key = (unit.path, unit.row_group)
            read, _ = self._progress.get(key, (0, False))
            for raw in skip_rows(raws, read):
                read += raw.num_rows
                # recorded before the batch leaves: a snapshot taken while this generator
                # is suspended at the ``yield`` counts the batch as emitted
                self._progress[key] = (read, False)
                raw = prefilter.apply(raw)
                batch = make_batch(raw.columns, fields, raw.num_rows)
                if keep is not None:
                    batch = batch.filter(keep(batch))
                if batch.num_rows:
                    yield batch
            self._progress[key] = (read, True)

    def _list_units(self) -> list[ScanUnit]:
        """This subtask's units; the first call also records the table's files."""
        if self._units is None:
            sizes = file_sizes(self.node.table)
            self._files.update(pa.table({"path": list(sizes), "size": list(sizes.values())},
                                        schema=_FILES))
            self._units = self._share(scan_units(self.node.table, list(self.node.filters)))
        return self._units

    # -- checkpoints --------------------------------------------------------------------------

    def snapshot_state(self, checkpoint_id: int) -> dict[str, pa.Table]:
        keys = list(self._progress)
        self._progress_state.update(pa.table({
            "path": [k[0] for k in keys], "row_group": [k[1] for k in keys],
            "rows": [self._progress[k][0] for k in keys],
            "done": [self._progress[k][1] for k in keys]}, schema=_PROGRESS))
        return self._store.snapshot()

    def restore_state(self, state: dict[str, pa.Table]) -> None:
        self._store.restore(state)
        saved = self._files.rows
        if not saved.num_rows:
            return  # saved before the scan started: nothing was read yet
        self._check_files(dict(zip(saved["path"].to_pylist(), saved["size"].to_pylist())))
        mine = {(u.path, u.row_group) for u in self._list_units()}
        rows = self._progress_state.rows
        for path, group, read, done in zip(rows["path"].to_pylist(),
                                           rows["row_group"].to_pylist(),
                                           rows["rows"].to_pylist(),
                                           rows["done"].to_pylist()):
            if (path, group) in mine:
                self._progress[(path, group)] = (read, done)

    def _check_files(self, saved: dict[str, int]) -> None:
        """Fail, naming the file, unless the table holds the files it held when the
        position was saved (the union of several old subtasks' listings is one listing)."""
        current = file_sizes(self.node.table)
        table = self.node.table.name
        for path, size in saved.items():
            if path not in current:
                raise ExecutionError(
                    f"cannot resume the scan of table '{table}': file '{path}' was part of "
                    "the table when the checkpoint was taken and is gone now")
            if current[path] != size:
                raise ExecutionError(
                    f"cannot resume the scan of table '{table}': file '{path}' changed since "
                    f"the checkpoint was taken ({size} bytes then, {current[path]} now)")
        for path in current:
            if path not in saved:
                raise ExecutionError(
                    f"cannot resume the scan of table '{table}': file '{path}' was added "
                    "after the checkpoint was taken")
