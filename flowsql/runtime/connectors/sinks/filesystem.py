"""The ``filesystem`` sink: rows become new files in the directory ``path``, in a format the
filesystem source reads back with the same table definition.

A file is written under a hidden in-progress name (``.<final name>.inprogress``); the
filesystem source skips names starting with '.' or '_', so a reader never sees a partial
file. A file is closed when it reaches ``'sink.rolling-policy.file-size'`` bytes (Flink's
option, default ``128mb``; checked after every written slice of rows, so a file may exceed
it by one slice). Files are opened only when rows arrive: no empty files. When a closed
file becomes visible depends on whether the job checkpoints
(``CheckpointSettings.of(settings)`` is not None):

* checkpointing off: files are named ``part-<uuid>-<n>.<ext>`` (one uuid per sink
  instance, ``n`` counting its files from 0) and renamed to that name as soon as they are
  closed: on a roll, at the end of the input and when the sink is closed (also after a
  failure: rows may then be written twice by a rerun);
* checkpointing on, exactly-once by two-phase commit as Flink's ``FileSink``: files are
  named ``part-<job id>-<attempt>-<subtask>-<n>.<ext>``; a rolled file and, at a snapshot,
  the open file are closed and become *pending* for that checkpoint, recorded in the
  sink's state; they are renamed when a checkpoint that covers them completes, at a
  restore of that state, or at the end of the input. A failure deletes the open file and
  the closed files no snapshot claimed; a restore deletes what earlier attempts left
  (``flowsql.runtime.connectors.sinks.pending_files`` states the rules).

Only insert-only input can be written (files cannot retract rows); the planner rejects an
updating input, and a retraction that still arrives is an error, never dropped silently.

Formats, each chosen to round-trip through ``flowsql.runtime.connectors.filesystem``:

* ``parquet``: one row group per written slice;
* ``csv``: Arrow's CSV writer with ``csv.field-delimiter``; a header line only when the
  table says ``'csv.ignore-first-line' = 'true'`` (the reader then skips one line per
  file). NULL is written as ``csv.null-literal`` when set (values then quoted, so a string
  equal to the literal stays a string), else as an empty field -- which reads back as
  NULL except for string columns, where an empty field is the empty string (the same
  ambiguity as Flink's csv format without a null literal);
* ``json``: newline-delimited objects, one key per column (NULL as ``null``; decimals as
  exact JSON numbers; dates, times and timestamps as SQL strings ``2024-01-01 00:00:00``,
  Flink's default ``json.timestamp-format.standard``).
"""

from __future__ import annotations

import json
import math
import os
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from flowsql.errors import CatalogError, ExecutionError
from flowsql.planner import types as T
from flowsql.planner.catalog import TableEntry
from flowsql.planner.config.connectors import FILESYSTEM
from flowsql.runtime.changelog import INSERT
from flowsql.runtime.checkpoint.config import CheckpointSettings
from flowsql.runtime.connectors.filesystem import normalized_schema
from flowsql.runtime.connectors.sinks import TableSink
from flowsql.runtime.connectors.sinks.pending_files import (
    PartFileNames,
    PendingFiles,
    in_progress_name,
    part_prefix,
)
from flowsql.runtime.operator import OperatorContext

ROLLING_SIZE = "sink.rolling-policy.file-size"
#: rows per written slice: bounds how far a file can overshoot the rolling size
_SLICE_BYTES = 1 << 20


class FileSink(TableSink):
    def __init__(self, table: TableEntry, context: OperatorContext) -> None:
        path = table.options.get("path")
        if not path:
            raise CatalogError(f"filesystem table '{table.name}' needs a 'path' option")
        self.format = str(FILESYSTEM.value(table.options, "format"))
        self.table = table
        self.directory = Path(path)
        self.schema = normalized_schema(table.schema)
        self.max_bytes: int = FILESYSTEM.value(table.options, ROLLING_SIZE)
        self._context = context
        #: None with checkpointing off: files are committed as soon as they are closed
        self.pending: PendingFiles | None = None
        if CheckpointSettings.of(context.settings) is None:
            self.prefix = f"part-{uuid.uuid4()}"
        else:
            self.pending = PendingFiles(self.directory, context)
            self.prefix = part_prefix(context.job_id, context.attempt, context.subtask_index)
        #: the run takes a final checkpoint after the end of the input (see ``finish``)
        self.final_checkpoint = self.pending is not None and context.checkpointing
        self.count = 0
        self._file: _PartFile | None = None
        self._finished = False
        #: finish() ran and the final checkpoint follows: its completion cleans up
        self._final_pending = False

    def write(self, batch: pa.RecordBatch, kinds: np.ndarray | None) -> None:
        if kinds is not None and bool((kinds != INSERT).any()):
            raise ExecutionError(f"filesystem table '{self.table.name}' cannot store "
                                 "updates or deletes (its input must be insert-only)")
        if not batch.num_rows:
            return
        rows = max(1, int(_SLICE_BYTES * batch.num_rows // max(1, batch.nbytes)))
        for start in range(0, batch.num_rows, rows):
            if self._file is None:
                self._file = self._open()
            self._file.write(batch.slice(start, rows))
            if self._file.size() >= self.max_bytes:
                self._roll()

    def snapshot_state(self, checkpoint_id: int) -> dict[str, pa.Table]:
        if self.pending is None:
            return {}
        self._roll()
        return self.pending.snapshot(checkpoint_id)

    def restore_state(self, state: dict[str, pa.Table]) -> None:
        if self.pending is not None:
            self.pending.restore(state)
        elif state:
            # a checkpoint restored into a run that takes none: its pending files are part
            # of its output all the same; after that nothing is tracked
            PendingFiles(self.directory, self._context).restore(state)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        if self.pending is not None:
            self.pending.checkpoint_complete(checkpoint_id)
            if self._final_pending:  # the final checkpoint of a bounded job completed
                self.pending.delete_earlier_attempts()

    def finish(self) -> None:
        self._roll()
        if self.pending is not None and self.final_checkpoint:
            self._final_pending = True
            return  # the final checkpoint claims the last files and commits them
        if self.pending is not None:
            self.pending.commit_everything()
        self._finished = True

    def close(self) -> None:
        if self.pending is None:
            self._roll()
            return
        # without finish() the job failed or was cancelled: keep only what a snapshot claimed
        current, self._file = self._file, None
        try:
            if current is not None:
                current.discard()
        finally:
            if not self._finished:
                self.pending.discard_unsnapshotted()

    def _open(self) -> _PartFile:
        self.directory.mkdir(parents=True, exist_ok=True)
        name = f"{self.prefix}-{self.count}.{self.format}"
        self.count += 1
        return _PartFile(self.directory / name, self.format, self.schema, self.table.options)

    def _roll(self) -> None:
        """Close the open file: committed at once without checkpointing, else handed to
        the pending files for the next snapshot."""
        if self._file is None:
            return
        current, self._file = self._file, None
        if self.pending is None:
            current.commit()
        else:
            current.close()
            self.pending.closed(PartFileNames(current.in_progress, current.final))


class _PartFile:
    """One part file being written under its in-progress name."""

    def __init__(self, final: Path, fmt: str, schema: pa.Schema,
                 options: dict[str, str]) -> None:
        self.final = final
        self.in_progress = final.with_name(in_progress_name(final.name))
        if self.final.exists() or self.in_progress.exists():
            # only a second job with the same job id can get here; never overwrite its rows
            raise ExecutionError(f"part file {final.name} already exists in {final.parent}: "
                                 "another job with the same job id writes this directory")
        self.format = fmt
        self.schema = schema
        self.sink = pa.OSFile(str(self.in_progress), "wb")
        self.parquet: pq.ParquetWriter | None = None
        self.csv: pcsv.CSVWriter | None = None
        if fmt == "parquet":
            self.parquet = pq.ParquetWriter(self.sink, schema)
        elif fmt == "csv":
            self.csv = pcsv.CSVWriter(self.sink, schema, write_options=_csv_write_options(options))

    def write(self, batch: pa.RecordBatch) -> None:
        batch = pa.RecordBatch.from_arrays(batch.columns, schema=self.schema)
        if self.parquet is not None:
            self.parquet.write_batch(batch)
        elif self.csv is not None:
            self.csv.write_batch(batch)
        else:
            self.sink.write(_json_lines(batch))

    def size(self) -> int:
        return int(self.sink.tell())

    def close(self) -> None:
        """Complete the file (footer, buffers) under its in-progress name."""
        if self.parquet is not None:
            self.parquet.close()
        elif self.csv is not None:
            self.csv.close()
        self.sink.close()

    def commit(self) -> None:
        """Close the file and make it visible under its final name."""
        self.close()
        os.replace(self.in_progress, self.final)

    def discard(self) -> None:
        """Drop the file: its rows belong to no snapshot and will be written again."""
        try:
            self.close()
        finally:
            self.in_progress.unlink(missing_ok=True)


def _csv_write_options(options: dict[str, str]) -> pcsv.WriteOptions:
    delimiter = FILESYSTEM.value(options, "csv.field-delimiter")
    header = FILESYSTEM.value(options, "csv.ignore-first-line")
    null_literal = FILESYSTEM.value(options, "csv.null-literal")
    if null_literal is None:
        return pcsv.WriteOptions(include_header=header, delimiter=delimiter)
    return pcsv.WriteOptions(include_header=header, delimiter=delimiter,
                             null_string=null_literal, quoting_style="all_valid")


def _json_lines(batch: pa.RecordBatch) -> bytes:
    """``{"a": 1, "b": "x"}`` per row: each column is turned into JSON text at once, then
    the lines are joined element-wise."""
    n = batch.num_rows
    parts: list[pa.Array] = []
    for index, (name, column) in enumerate(zip(batch.schema.names, batch.columns)):
        key = ("{" if index == 0 else ", ") + json.dumps(name) + ": "
        parts.append(pa.array([key] * n, pa.string()))
        parts.append(pc.fill_null(_json_column(column), "null"))
    parts.append(pa.array(["}\n"] * n, pa.string()))
    lines = pc.binary_join_element_wise(*parts, "")
    return "".join(lines.to_pylist()).encode("utf-8")


def _json_column(column: pa.Array) -> pa.Array:
    t = column.type
    if T.is_integer(t) or T.is_decimal(t) or pa.types.is_boolean(t):
        # Arrow's decimal text is exact ('1.50', '1E-7'), a valid JSON number
        return pc.cast(column, pa.string())
    if T.is_float(t):
        values = column.to_pylist()
        if any(v is not None and not math.isfinite(v) for v in values):
            raise ExecutionError("JSON cannot represent NaN or infinite values")
        return pa.array([None if v is None else repr(float(v)) for v in values], pa.string())
    if T.is_temporal(t) or T.is_string(t):
        text = pc.cast(column, pa.string())
    else:
        raise ExecutionError(f"the json format cannot write {T.sql_name(t)} values")
    return pa.array([None if v is None else json.dumps(v) for v in text.to_pylist()],
                    pa.string())
