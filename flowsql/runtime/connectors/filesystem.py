"""The bounded filesystem connector: Parquet, CSV and newline-delimited JSON files.

``path`` is a file or a directory; a directory means every visible file in it (names
starting with '.' or '_' are skipped, as Hadoop/Flink marker files are), in name order.

Parquet is read through ``pyarrow.dataset`` with the table's engine schema imposed, so
string views arrive as strings and filters bind; every file must have every declared column
(a missing one is a DataError naming the file and the column, never a column of NULLs),
and a table whose columns are inferred needs files of one schema; translated filters prune whole files and
row groups by their statistics (see ``pushdown``) and rows are not filtered further here. CSV and JSON are parsed with the declared DDL schema;
they get no pushdown. Every batch has the table's normalized types and at most
``batch_size`` rows.

Options use Flink's names: ``csv.field-delimiter`` (default ','), ``csv.ignore-first-line``
(default 'false'), ``csv.null-literal`` (unset: an empty field of a non-string column is
NULL and an empty string field is ''; set: that literal is NULL in every column).

Data problems are :class:`DataError` naming the file and, where it can be found, the line
and column; a raw pyarrow error never escapes.

Bad records: with Flink's ``csv.ignore-parse-errors`` / ``json.ignore-parse-errors`` (or
``format.ignore-parse-errors``) = 'true' a record that does not parse is skipped instead,
and counted in ``metrics[PARSE_ERRORS_IGNORED]``. The fast Arrow read stays the normal
path; only when it fails on a file is that file re-read by the tolerant path, which splits
the file into lines (a record is one line, as for Arrow without ``newlines_in_values``)
and parses blocks of lines with the very same Arrow options, bisecting a block that fails
until the failing lines are isolated. So "bad" means exactly what the fast path rejects,
every other row comes out as the fast path would have produced it, and the rows the fast
path already yielded before failing are not yielded twice (they are a prefix of the good
rows, because parsing is row by row with declared types).
"""

from __future__ import annotations

import csv
import dataclasses
import datetime
import io
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.dataset as ds
import pyarrow.json as pjson
import pyarrow.parquet as pq

from flowsql.errors import CatalogError, ConfigError, DataError, ExecutionError
from flowsql.planner import types as T
from flowsql.planner.catalog import TableEntry, TableStatistics
from flowsql.planner.config.connectors import FILESYSTEM
from flowsql.planner.expressions import Expr
from flowsql.planner.statistics import METADATA
from flowsql.runtime.connectors.pushdown import to_dataset_filter
from flowsql.runtime.expressions.casts import converter
from flowsql.runtime.statistics.fingerprint import files_fingerprint
from flowsql.runtime.statistics.parquet_footer import footer_column_statistics

#: metrics key: records skipped because of ``*.ignore-parse-errors``
PARSE_ERRORS_IGNORED = "parse_errors_ignored"


# -- files ------------------------------------------------------------------------------------

def _path_option(options: dict[str, str]) -> str:
    path = options.get("path")
    if not path:
        raise DataError("the filesystem connector needs a 'path' option")
    return path


def data_files(path: str) -> list[str]:
    """The files behind ``path`` (a file, or a directory's visible files in name order)."""
    p = Path(path)
    if p.is_file():
        return [str(p)]
    if p.is_dir():
        return sorted(str(f) for f in p.rglob("*") if f.is_file() and not any(
            part.startswith((".", "_")) for part in f.relative_to(p).parts))
    raise DataError(f"path '{path}' does not exist")


def _format(options: dict[str, str]) -> str:
    return str(FILESYSTEM.value(options, "format"))


def normalized_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field(f.name, T.normalize_storage_type(f.type), nullable=True)
                      for f in schema])


# -- catalog-time questions ---------------------------------------------------------------------

def infer_schema(options: dict[str, str]) -> pa.Schema:
    """The schema of a Parquet table (engine types); CSV and JSON need a column list."""
    fmt = _format(options)
    if fmt != "parquet":
        raise CatalogError(f"format '{fmt}' does not describe its columns: declare them in "
                           "CREATE TABLE (name type, ...)")
    files = data_files(_path_option(options))
    if not files:
        raise DataError(f"no data files under '{options['path']}'")
    first = _file_schema(files[0])
    for other in files[1:]:
        difference = _schema_difference(first, _file_schema(other))
        if difference:
            raise DataError(f"Parquet file '{other}' does not match '{files[0]}': {difference}; "
                            "the files of one table must have the same columns")
    return first


def _file_schema(path: str) -> pa.Schema:
    try:
        return normalized_schema(pq.read_schema(path))
    except (pa.ArrowException, OSError) as e:
        raise DataError(f"cannot read the Parquet schema of '{path}': {e}") from None


def _schema_difference(expected: pa.Schema, actual: pa.Schema) -> str | None:
    """The first column in which ``actual`` differs from ``expected``, in words; None when
    both have the same columns of the same types (order may differ)."""
    for field in expected:
        index = actual.get_field_index(field.name)
        if index < 0:
            return f"it has no column '{field.name}'"
        if not actual.field(index).type.equals(field.type):
            return (f"column '{field.name}' is {actual.field(index).type} there, "
                    f"{field.type} here")
    for field in actual:
        if expected.get_field_index(field.name) < 0:
            return f"it has an extra column '{field.name}'"
    return None


def table_statistics(options: dict[str, str], schema: pa.Schema | None = None
                     ) -> TableStatistics:
    """What the files say without being scanned: total file size, and for Parquet the row
    count and per-column null counts and min/max from the footers (origin "metadata"; the
    columns of ``schema``, the table's engine schema, when given). CSV and JSON files say
    nothing (origin "none"). The fingerprint of the files tells when these figures go
    stale. A path that does not exist yet has unknown statistics and no fingerprint."""
    try:
        files = data_files(_path_option(options))
    except DataError:
        return TableStatistics()
    total_bytes = sum(os.path.getsize(f) for f in files)
    fingerprint = files_fingerprint(files)
    if _format(options) != "parquet":
        return TableStatistics(None, total_bytes, fingerprint=fingerprint)
    try:
        metadata = [pq.ParquetFile(f).metadata for f in files]
    except (pa.ArrowException, OSError):
        return TableStatistics(None, total_bytes, fingerprint=fingerprint)
    rows = sum(m.num_rows for m in metadata)
    columns = footer_column_statistics(metadata, schema) if schema is not None else {}
    return TableStatistics(rows, total_bytes, _distinct_bounds(metadata, rows), columns,
                           origin=METADATA, fingerprint=fingerprint)


def _distinct_bounds(metadata: list[pq.FileMetaData], rows: int) -> dict[str, int]:
    """max - min + 1 over all row groups for integer and date columns (capped at the row
    count); other columns get no bound. Reads footers only."""
    lows: dict[str, int] = {}
    highs: dict[str, int] = {}
    skip: set[str] = set()
    for meta in metadata:
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            for c in range(group.num_columns):
                column = group.column(c)
                name = column.path_in_schema
                stats = column.statistics
                if name in skip:
                    continue
                if stats is None or not stats.has_min_max or \
                        not isinstance(stats.min, int | datetime.date) or \
                        isinstance(stats.min, bool | datetime.datetime):
                    skip.add(name)
                    continue
                low, high = _ordinal(stats.min), _ordinal(stats.max)
                lows[name] = min(lows.get(name, low), low)
                highs[name] = max(highs.get(name, high), high)
    return {name: min(rows, highs[name] - lows[name] + 1) for name in lows if name not in skip}


def _ordinal(value: int | datetime.date) -> int:
    return value.toordinal() if isinstance(value, datetime.date) else int(value)


# -- scanning -------------------------------------------------------------------------------------

def scan(table: TableEntry, columns: list[str], filters: list[Expr],
         batch_size: int, metrics: dict[str, Any] | None = None) -> Iterator[pa.RecordBatch]:
    """Batches of ``columns`` (in that order) of the table; ``filters`` may prune data but
    the caller must still apply them (see the module docstring of ``pushdown``).
    ``metrics`` receives the count of ignored bad records (see the module docstring)."""
    files = data_files(_path_option(table.options))
    yield from scan_files(table, files, columns, filters, batch_size, metrics)


def scan_files(table: TableEntry, files: list[str], columns: list[str], filters: list[Expr],
               batch_size: int, metrics: dict[str, Any] | None = None
               ) -> Iterator[pa.RecordBatch]:
    """:func:`scan` restricted to ``files`` (all of the table's format), in that order."""
    fmt = _format(table.options)
    schema = normalized_schema(table.schema)
    missing = [c for c in columns if c not in schema.names]
    if missing:
        raise DataError(f"table '{table.name}' has no column {', '.join(missing)}")
    out_schema = pa.schema([schema.field(c) for c in columns])
    if not files:
        return
    tolerant = _BadRecords(metrics) if ignores_parse_errors(table.options) else None
    if fmt == "parquet":
        batches = _scan_parquet(files, schema, columns, filters, batch_size)
    elif fmt == "csv":
        batches = (b for f in files
                   for b in _scan_csv(f, table, schema, columns, batch_size, tolerant))
    else:
        batches = (b for f in files
                   for b in _scan_json(f, schema, columns, batch_size, tolerant))
    for batch in batches:
        if batch.num_rows:
            yield _conform(batch, out_schema)


def ignores_parse_errors(options: dict[str, str]) -> bool:
    """Whether bad CSV/JSON records are skipped (Flink's ``<format>.ignore-parse-errors``;
    ``format.ignore-parse-errors`` is accepted for every format)."""
    own = f"{_format(options)}.ignore-parse-errors"
    for key in (own, "format.ignore-parse-errors"):
        if key in options:
            try:
                return bool(FILESYSTEM.value(options, key))
            except KeyError:  # a format without such an option (parquet)
                break
            except ConfigError as error:
                raise CatalogError(str(error)) from None
    return False


def _conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    if batch.schema.equals(schema):
        return batch
    arrays = [col if col.type.equals(f.type) else pc.cast(col, f.type)
              for col, f in zip(batch.columns, schema)]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _rows_table(batches: list[pa.RecordBatch]) -> pa.Table:
    return pa.Table.from_batches(batches) if batches else pa.table({})


def _rebatch(batch: pa.RecordBatch, batch_size: int) -> Iterator[pa.RecordBatch]:
    for start in range(0, batch.num_rows, batch_size):
        yield batch.slice(start, batch_size)


# Resumable scans -----------------------------------------------------------------------------

@dataclass(frozen=True)
class ScanUnit:
    """One resumable piece of a bounded scan: a Parquet row group (``row_group`` is its id
    in the file) or a whole CSV/JSON file (``row_group`` is -1). A scan reads its units in
    the order :func:`scan_units` lists them, each from start to end, so where it stands is
    a unit and a number of rows read from it."""

    path: str
    row_group: int
    fragment: Any = dataclasses.field(default=None, compare=False, repr=False)


def scan_units(table: TableEntry, filters: list[Expr]) -> list[ScanUnit]:
    """The units a scan of ``table`` under ``filters`` reads, in reading order: the same
    list for the same files and filters (Parquet row groups pruned by statistics, in file
    name order; text files in name order)."""
    if _format(table.options) != "parquet":
        return [ScanUnit(path, -1) for path in data_files(_path_option(table.options))]
    return [ScanUnit(group.path, group.row_groups[0].id, group)
            for group in row_groups(table, filters)]


def read_unit(table: TableEntry, unit: ScanUnit, columns: list[str], batch_size: int,
              metrics: dict[str, Any] | None = None,
              dictionary_columns: frozenset[str] = frozenset()) -> Iterator[pa.RecordBatch]:
    """The batches of ``unit`` (of ``columns``, in that order), exactly as :func:`scan`
    yields that unit's rows: :func:`scan` is the concatenation of its units' reads.

    ``dictionary_columns``: string columns to deliver as Arrow dictionaries of strings
    where the row group stores them dictionary-encoded (cheaper to decode; the caller
    casts them to strings)."""
    if unit.row_group < 0:
        yield from scan_files(table, [unit.path], columns, [], batch_size, metrics)
        return
    schema = normalized_schema(table.schema)
    fragment = unit.fragment
    encoded = _dictionary_encoded(unit, dictionary_columns)
    if encoded:
        fragment = ds.ParquetFileFormat(
            read_options=ds.ParquetReadOptions(dictionary_columns=encoded)).make_fragment(
                unit.path, unit.fragment.filesystem, row_groups=[unit.row_group])
        schema = pa.schema([pa.field(f.name, pa.dictionary(pa.int32(), f.type))
                            if f.name in encoded else f for f in schema])
    out_schema = pa.schema([schema.field(c) for c in columns])
    try:
        for batch in fragment.to_batches(schema=schema, columns=columns,
                                         batch_size=batch_size):
            if batch.num_rows:
                yield _conform(batch, out_schema)
    except (pa.ArrowException, OSError) as e:
        raise DataError(f"cannot read Parquet file '{unit.path}': {e}") from None


#: a dictionary page above this share of its column chunk's bytes marks a column of mostly
#: distinct values (free text): reading it as an Arrow dictionary re-encodes every value the
#: writer stored plainly once its dictionary grew too large (TPC-H ``o_comment``: five times
#: the decoding time of plain strings), and a filter checked per distinct value saves nothing
_DICTIONARY_SHARE_LIMIT = 1 / 8
#: dictionary pages up to this many bytes are cheap to decode whatever their share (in a
#: small row group even a few distinct values are a large part of the chunk)
_SMALL_DICTIONARY_BYTES = 16 * 1024


def _dictionary_encoded(unit: ScanUnit, wanted: frozenset[str]) -> set[str]:
    """The ``wanted`` columns that ``unit``'s row group stores with a dictionary page that
    is a small part of the column chunk (few distinct values)."""
    if not wanted:
        return set()
    try:
        group = unit.fragment.metadata.row_group(unit.row_group)
    except (pa.ArrowException, OSError, IndexError):
        return set()
    found = set()
    for i in range(group.num_columns):
        column = group.column(i)
        if column.path_in_schema in wanted and column.has_dictionary_page \
                and _small_dictionary(column):
            found.add(column.path_in_schema)
    return found


def _small_dictionary(column: Any) -> bool:
    """Whether ``column``'s dictionary page (the bytes before its first data page) is at
    most :data:`_SMALL_DICTIONARY_BYTES` or :data:`_DICTIONARY_SHARE_LIMIT` of the column
    chunk."""
    dictionary_bytes = column.data_page_offset - column.dictionary_page_offset
    return 0 <= dictionary_bytes <= max(_SMALL_DICTIONARY_BYTES,
                                        column.total_compressed_size * _DICTIONARY_SHARE_LIMIT)


def file_sizes(table: TableEntry) -> dict[str, int]:
    """Every data file of ``table`` with its size in bytes: what a restored scan compares
    with the files it was reading when its position was saved."""
    return {path: os.path.getsize(path) for path in data_files(_path_option(table.options))}


def skip_rows(batches: Iterator[pa.RecordBatch], rows: int) -> Iterator[pa.RecordBatch]:
    """``batches`` without their first ``rows`` rows (emitted before a restore)."""
    for batch in batches:
        if rows >= batch.num_rows:
            rows -= batch.num_rows
            continue
        yield batch.slice(rows) if rows else batch
        rows = 0


# Parquet -------------------------------------------------------------------------------------

def _dataset(files: list[str], schema: pa.Schema) -> ds.Dataset:
    try:
        return ds.dataset(files, schema=schema, format="parquet")
    except (pa.ArrowException, OSError) as e:
        raise DataError(f"cannot open Parquet files {files[0]}...: {e}") from None


def row_groups(table: TableEntry, filters: list[Expr]) -> list[ds.ParquetFileFragment]:
    """The row groups a scan of ``table`` reads under ``filters`` (after pruning)."""
    files = data_files(_path_option(table.options))
    return _row_groups(_dataset(files, normalized_schema(table.schema)), filters)


def _row_groups(dataset: ds.Dataset, filters: list[Expr]) -> list[Any]:
    """Row groups whose statistics may satisfy ``filters``. Predicates are translated per
    file against its physical schema, because statistics carry the stored types (string
    views compare only with string-view literals)."""
    groups: list[Any] = []
    for fragment in dataset.get_fragments():
        try:
            physical = fragment.physical_schema
            _check_declared_columns(fragment.path, physical, dataset.schema)
            predicate = to_dataset_filter(filters, physical)
            groups.extend(fragment.split_by_row_group(predicate, schema=physical))
        except (pa.ArrowException, OSError) as e:
            raise DataError(f"cannot read Parquet file '{fragment.path}': {e}") from None
    return groups


def _check_declared_columns(path: str, physical: pa.Schema, declared: pa.Schema) -> None:
    """A declared column the file lacks is an error, not a column of NULLs (a file from
    another table or another version of the schema would otherwise read silently wrong).
    Every declared column is checked, read or not, so a query's success does not depend
    on which columns it selects."""
    for name in declared.names:
        if physical.get_field_index(name) < 0:
            raise DataError(f"Parquet file '{path}' has no column '{name}' (declared by the "
                            "table)")


def _scan_parquet(files: list[str], schema: pa.Schema, columns: list[str],
                  filters: list[Expr], batch_size: int) -> Iterator[pa.RecordBatch]:
    dataset = _dataset(files, schema)
    for group in _row_groups(dataset, filters):
        try:
            # Rows are not filtered here: the caller applies the exact predicates anyway.
            yield from group.to_batches(schema=schema, columns=columns, batch_size=batch_size)
        except (pa.ArrowException, OSError) as e:
            raise DataError(f"cannot read Parquet file '{group.path}': {e}") from None


# CSV -----------------------------------------------------------------------------------------

def _csv_options(table: TableEntry) -> tuple[str, bool, str | None]:
    options = table.options
    return (FILESYSTEM.value(options, "csv.field-delimiter"),
            FILESYSTEM.value(options, "csv.ignore-first-line"),
            FILESYSTEM.value(options, "csv.null-literal"))


def _parse_type(t: pa.DataType) -> pa.DataType:
    """The type pyarrow parses a column as; dates and booleans are converted afterwards
    with SQL's cast rules (pyarrow's parsers are stricter than DuckDB and Flink)."""
    return T.STRING if pa.types.is_date(t) or pa.types.is_boolean(t) else t


def _csv_reading(table: TableEntry, schema: pa.Schema, columns: list[str], header: bool
                 ) -> tuple[pcsv.ReadOptions, pcsv.ParseOptions, pcsv.ConvertOptions]:
    delimiter, _, null_literal = _csv_options(table)
    read = pcsv.ReadOptions(column_names=schema.names, skip_rows=1 if header else 0,
                            block_size=1 << 22)
    parse = pcsv.ParseOptions(delimiter=delimiter)
    null_values = [null_literal] if null_literal is not None else [""]
    convert = pcsv.ConvertOptions(
        column_types={f.name: _parse_type(f.type) for f in schema},
        include_columns=columns, null_values=null_values,
        strings_can_be_null=null_literal is not None, quoted_strings_can_be_null=False)
    return read, parse, convert


def _finish_csv_batch(batch: pa.RecordBatch, table: TableEntry, schema: pa.Schema,
                      path: str) -> pa.RecordBatch:
    if table.options.get("csv.null-literal") is None:
        batch = _empty_as_null(batch, schema)
    return _convert_late(batch, schema, path)


def _scan_csv(path: str, table: TableEntry, schema: pa.Schema, columns: list[str],
              batch_size: int, tolerant: _BadRecords | None) -> Iterator[pa.RecordBatch]:
    header = _csv_options(table)[1]
    read, parse, convert = _csv_reading(table, schema, columns, header)
    yielded = 0
    try:
        with pcsv.open_csv(path, read_options=read, parse_options=parse,
                           convert_options=convert) as reader:
            for batch in reader:
                for piece in _rebatch(_finish_csv_batch(batch, table, schema, path),
                                      batch_size):
                    yielded += piece.num_rows
                    yield piece
        return
    except (pa.ArrowException, OSError) as e:
        if tolerant is None:
            raise _locate_csv_error(path, table, schema, e) from None
    read, parse, convert = _csv_reading(table, schema, columns, header=False)

    def parse_lines(data: bytes) -> pa.Table:
        parsed = pcsv.read_csv(io.BytesIO(data), read_options=read, parse_options=parse,
                               convert_options=convert)
        return _rows_table([_finish_csv_batch(b, table, schema, path)
                            for b in parsed.to_batches()])

    yield from tolerant.read(path, parse_lines, skip_lines=1 if header else 0,
                             skip_rows=yielded, batch_size=batch_size)


def _empty_as_null(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """Empty fields of columns parsed as text but typed otherwise (dates, booleans) are NULL,
    as they are for the columns pyarrow converts itself."""
    arrays = []
    for name, column in zip(batch.schema.names, batch.columns):
        if T.is_string(column.type) and not T.is_string(schema.field(name).type):
            column = pc.if_else(pc.equal(column, ""), pa.scalar(None, column.type), column)
        arrays.append(column)
    return pa.RecordBatch.from_arrays(arrays, names=batch.schema.names)


def _convert_late(batch: pa.RecordBatch, schema: pa.Schema, path: str) -> pa.RecordBatch:
    arrays = []
    for name, column in zip(batch.schema.names, batch.columns):
        target = schema.field(name).type
        if not column.type.equals(target):
            try:
                column = converter(column.type, target)(column)
            except (pa.ArrowException, ValueError, ExecutionError) as e:
                raise pa.ArrowInvalid(str(e)) from None
        arrays.append(column)
    return pa.RecordBatch.from_arrays(arrays, names=batch.schema.names)


def _value_fits(text: str, target: pa.DataType) -> bool:
    try:
        converter(T.STRING, target)(pa.array([text], T.STRING))
    except (pa.ArrowException, ValueError, ExecutionError):
        return False
    return True


def _locate_csv_error(path: str, table: TableEntry, schema: pa.Schema,
                      error: Exception) -> DataError:
    """Find the first bad record (error path only, so a plain Python scan is fine)."""
    delimiter, header, null_literal = _csv_options(table)
    nulls = {null_literal} if null_literal is not None else {""}
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.reader(handle, delimiter=delimiter)
            for index, record in enumerate(reader):
                if index == 0 and header:
                    continue
                line = reader.line_num
                if len(record) != len(schema):
                    return DataError(f"{path}, line {line}: expected {len(schema)} fields, "
                                     f"found {len(record)}")
                for field, text in zip(schema, record):
                    if text in nulls and not (T.is_string(field.type) and null_literal is None):
                        continue
                    if not T.is_string(field.type) and not _value_fits(text, field.type):
                        return DataError(f"{path}, line {line}, column '{field.name}': cannot "
                                         f"parse '{text}' as {T.sql_name(field.type)}")
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        return DataError(f"cannot read CSV file '{path}': {e}")
    return DataError(f"cannot read CSV file '{path}': {error}")


# JSON ----------------------------------------------------------------------------------------

def _json_parse_type(t: pa.DataType) -> pa.DataType:
    return T.STRING if pa.types.is_date(t) else t


def _scan_json(path: str, schema: pa.Schema, columns: list[str], batch_size: int,
               tolerant: _BadRecords | None) -> Iterator[pa.RecordBatch]:
    parse_schema = pa.schema([pa.field(f.name, _json_parse_type(f.type)) for f in schema])
    options = pjson.ParseOptions(explicit_schema=parse_schema,
                                 unexpected_field_behavior="ignore")
    yielded = 0
    try:
        data = pjson.read_json(path, parse_options=options).select(columns)
        for batch in data.to_batches(max_chunksize=batch_size):
            batch = _convert_late(batch, schema, path)
            yielded += batch.num_rows
            yield batch
        return
    except (pa.ArrowException, OSError) as e:
        if tolerant is None:
            raise _locate_json_error(path, schema, e) from None

    def parse_lines(data: bytes) -> pa.Table:
        parsed = pjson.read_json(io.BytesIO(data), parse_options=options).select(columns)
        return _rows_table([_convert_late(b, schema, path) for b in parsed.to_batches()])

    yield from tolerant.read(path, parse_lines, skip_lines=0, skip_rows=yielded,
                             batch_size=batch_size)


_JSON_KINDS: list[tuple[Any, tuple[type, ...]]] = [
    (pa.types.is_boolean, (bool,)),
    (T.is_integer, (int,)),
    (lambda t: T.is_float(t) or T.is_decimal(t), (int, float)),
    (T.is_string, (str,)),
    (T.is_temporal, (str,)),
]


def _json_value_fits(value: Any, target: pa.DataType) -> bool:
    if value is None:
        return True
    for test, kinds in _JSON_KINDS:
        if test(target):
            if isinstance(value, bool) and bool not in kinds:
                return False
            if not isinstance(value, kinds):
                return False
            return not (T.is_temporal(target) and not _value_fits(str(value), target))
    return True


def _locate_json_error(path: str, schema: pa.Schema, error: Exception) -> DataError:
    try:
        with open(path, encoding="utf-8") as handle:
            for line_number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as e:
                    return DataError(f"{path}, line {line_number}: invalid JSON ({e.msg})")
                if not isinstance(record, dict):
                    return DataError(f"{path}, line {line_number}: expected a JSON object")
                for field in schema:
                    value = record.get(field.name)
                    if not _json_value_fits(value, field.type):
                        return DataError(f"{path}, line {line_number}, column '{field.name}': "
                                         f"cannot read {json.dumps(value)} as "
                                         f"{T.sql_name(field.type)}")
    except (OSError, UnicodeDecodeError) as e:
        return DataError(f"cannot read JSON file '{path}': {e}")
    return DataError(f"cannot read JSON file '{path}': {error}")


# Bad records -----------------------------------------------------------------------------------

class _BadRecords:
    """The tolerant re-read of one file whose fast read failed (see the module docstring).

    The whole file is held in memory while it is re-read: this path only runs for files
    that do hold bad records, and a failing file is the exception, not the rule.
    """

    #: lines per block parsed at once before bisecting: bounds the re-parsing a bad line
    #: costs to about twice this many lines
    BLOCK_LINES = 1024

    def __init__(self, metrics: dict[str, Any] | None) -> None:
        self.metrics = metrics if metrics is not None else {}
        self.metrics.setdefault(PARSE_ERRORS_IGNORED, 0)

    def read(self, path: str, parse: Callable[[bytes], pa.Table], skip_lines: int,
             skip_rows: int, batch_size: int) -> Iterator[pa.RecordBatch]:
        """The good rows of ``path`` after the first ``skip_rows`` (already delivered);
        ``parse`` turns some whole lines into rows or raises on any bad one."""
        try:
            raw = Path(path).read_bytes()
        except OSError as e:
            raise DataError(f"cannot read file '{path}': {e}") from None
        # surrogateescape keeps undecodable bytes, so a line goes back to Arrow byte-exact
        # and Arrow (not Python) decides whether it is valid UTF-8.
        text = raw.decode("utf-8", errors="surrogateescape")
        lines = list(io.StringIO(text, newline=""))[skip_lines:]
        good: list[pa.Table] = []
        bad = 0
        for start in range(0, len(lines), self.BLOCK_LINES):
            bad += self._bisect(lines[start:start + self.BLOCK_LINES], parse, good)
        self.metrics[PARSE_ERRORS_IGNORED] = self.metrics.get(PARSE_ERRORS_IGNORED, 0) + bad
        parts = [t for t in good if t.num_rows]
        if not parts:
            return
        rows = pa.concat_tables(parts).slice(skip_rows)
        yield from rows.to_batches(max_chunksize=batch_size)

    @staticmethod
    def _bisect(lines: list[str], parse: Callable[[bytes], pa.Table],
                good: list[pa.Table]) -> int:
        """Append the parsed good lines of ``lines`` to ``good`` in order; return how many
        non-blank lines failed on their own."""
        bad = 0
        pending = [(0, len(lines))]  # a stack; the right half is pushed first: file order
        while pending:
            low, high = pending.pop()
            chunk = "".join(lines[low:high]).encode("utf-8", errors="surrogateescape")
            try:
                good.append(parse(chunk))
            except (pa.ArrowException, OSError):
                if high - low == 1:
                    bad += 1 if lines[low].strip() else 0
                else:
                    middle = (low + high) // 2
                    pending.append((middle, high))
                    pending.append((low, middle))
        return bad
