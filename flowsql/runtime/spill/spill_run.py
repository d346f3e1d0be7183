"""A run of record batches on disk: written once as an Arrow IPC stream, read back in order."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc

from flowsql.errors import ResourceExhausted
from flowsql.runtime.spill.spill_space import SpillSpace


@dataclass
class SpillRun:
    """One spilled file: its batches come back in the order they were written.

    ``nbytes`` is the in-memory size of what was written (what reading it back will hold),
    ``file_bytes`` its size on disk.
    """

    path: str
    schema: pa.Schema
    rows: int
    nbytes: int
    file_bytes: int
    _deleted: bool = field(default=False, repr=False)

    def read(self) -> Iterator[pa.RecordBatch]:
        """The batches, streamed from the file (one batch in memory at a time). Plain
        reads, not a memory map: mapped pages stay resident after use and would count
        in the process's memory beyond what the operators account."""
        with pa.OSFile(self.path, "rb") as source:
            yield from ipc.open_stream(source)

    def read_table(self) -> pa.Table:
        """The whole run as one table (the caller has accounted ``nbytes``)."""
        with pa.OSFile(self.path, "rb") as source:
            return ipc.open_stream(source).read_all()

    def delete(self) -> None:
        """Remove the file (idempotent); the space's cleanup removes it otherwise."""
        if not self._deleted:
            self._deleted = True
            with contextlib.suppress(FileNotFoundError):
                os.remove(self.path)


class SpillWriter:
    """Appends batches to a new spill file; ``finish`` closes it and returns the run.

    ``metrics`` (an operator context's metrics) gets ``spilled_bytes`` and
    ``spilled_runs`` added, which EXPLAIN ANALYZE reports per operator.
    """

    def __init__(self, space: SpillSpace, schema: pa.Schema, label: str,
                 metrics: dict[str, Any] | None = None) -> None:
        self._space = space
        self._schema = schema
        self._metrics = metrics
        self.path = space.new_path(label)
        try:
            self._sink = pa.OSFile(self.path, "wb")
        except OSError as exc:
            raise ResourceExhausted(f"cannot write spill file '{self.path}': {exc}") from None
        self._writer = ipc.new_stream(self._sink, schema)
        self._rows = 0
        self._nbytes = 0

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        if batch.schema != self._schema:
            batch = pa.RecordBatch.from_arrays(batch.columns, schema=self._schema)
        try:
            self._writer.write_batch(batch)
        except OSError as exc:
            raise ResourceExhausted(
                f"writing spill file '{self.path}' failed (is io.tmp.dirs full?): {exc}"
            ) from None
        self._rows += batch.num_rows
        self._nbytes += batch.nbytes

    def finish(self) -> SpillRun:
        self._writer.close()
        self._sink.close()
        file_bytes = os.path.getsize(self.path)
        self._space.bytes_written += file_bytes
        self._space.files_written += 1
        if self._metrics is not None:
            self._metrics["spilled_bytes"] = self._metrics.get("spilled_bytes", 0) + file_bytes
            self._metrics["spilled_runs"] = self._metrics.get("spilled_runs", 0) + 1
        return SpillRun(self.path, self._schema, self._rows, self._nbytes, file_bytes)


def spill_batches(space: SpillSpace, schema: pa.Schema, batches: Iterable[pa.RecordBatch],
                  label: str, metrics: dict[str, Any] | None = None) -> SpillRun:
    """Write ``batches`` to one new run."""
    writer = SpillWriter(space, schema, label, metrics)
    for batch in batches:
        writer.write(batch)
    return writer.finish()
