"""Scan filters on a string column evaluated once per distinct value, before the strings
are decoded.

Decoding a Parquet string column into Arrow strings costs more than decoding all of a
TPC-H row's numbers; its low-cardinality strings (ship modes, instructions, priorities)
are stored dictionary-encoded, and reading them as Arrow dictionaries is cheap. A scan
filter that reads one string column (``l_shipmode IN ('MAIL', 'SHIP')``) can then be
evaluated on the dictionary's few values and spread to the rows through the indices, the
batch cut down to the rows that pass, and only those rows' strings decoded.

Exactness: such a conjunct is a deterministic function of its one column, so its value on
a row is its value on that row's dictionary entry (a NULL row maps to an extra NULL entry);
the rows dropped here fail the filter, and the scan still applies every filter exactly to
what is left. A column chunk stored without a dictionary is read as plain strings and not
prefiltered.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from flowsql.planner.expressions import Call, Case, Cast, ColumnRef, Expr, Literal, walk
from flowsql.planner.schema import Schema
from flowsql.runtime.expressions import compile_predicate

#: expression nodes a prefiltered conjunct may consist of (no function of several rows,
#: no user function: those may be non-deterministic)
_ROW_WISE = (Call, Case, Cast, ColumnRef, Literal)

Mask = Callable[[pa.RecordBatch], pa.Array]


class DictionaryPrefilter:
    """Built from a scan's fields and filters; ``columns`` are the string columns worth
    reading as dictionaries, ``apply`` cuts a raw batch (columns in ``fields`` order) down
    to the rows that may pass the filters."""

    def __init__(self, fields: Schema, filters: Sequence[Expr]) -> None:
        positions = {f.cid: i for i, f in enumerate(fields)}
        self._checks: list[tuple[int, Mask]] = []
        for conjunct in filters:
            refs = {e.cid for e in walk(conjunct) if isinstance(e, ColumnRef)}
            if len(refs) != 1 or not all(isinstance(e, _ROW_WISE) for e in walk(conjunct)):
                continue
            (cid,) = refs
            if cid not in positions or not pa.types.is_string(fields[positions[cid]].dtype):
                continue
            field = fields[positions[cid]]
            self._checks.append((positions[cid], compile_predicate(conjunct, (field,))))
        self.columns = frozenset(fields[i].name for i, _ in self._checks)
        self._names = [fields[i].name for i, _ in self._checks]

    def apply(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        mask: pa.Array | None = None
        for (index, check), name in zip(self._checks, self._names):
            column = batch.column(index)
            if not pa.types.is_dictionary(column.type):
                continue
            values = pa.concat_arrays([column.dictionary.cast(pa.string()),
                                       pa.nulls(1, pa.string())])
            passes = check(pa.record_batch([values], names=[name]))
            indices = column.indices
            if indices.null_count:
                indices = pc.fill_null(indices, len(values) - 1)
            rows = pc.take(passes, indices)
            mask = rows if mask is None else pc.and_(mask, rows)
        return batch if mask is None else batch.filter(mask)
