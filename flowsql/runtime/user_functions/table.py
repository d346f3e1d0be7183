"""Calling a Python table function (``LATERAL TABLE(f(x))``) on a whole batch.

The contract (vectorized; documented for users in docs/table-functions.md):

* The function is called once per input batch with one ``pyarrow.Array`` per argument,
  all of the batch's length ``n`` (a literal argument arrives repeated).
* It returns ``(rows, parents)``:

  - ``rows``: the output rows, a ``pyarrow.RecordBatch`` or ``pyarrow.Table`` with the
    declared result columns in declared order (names are not looked at), or a sequence of
    one array (or Python list) per declared column;
  - ``parents``: for every output row, the index in ``[0, n)`` of the input row it belongs
    to (an integer array or list, no NULLs). An input row may have any number of output
    rows, in any order; an input row no index names produced nothing.

  Columns are cast to the declared types (a cast that loses data is an error).
* The function must not keep state between calls: batches reach it in any grouping and,
  at parallelism above 1, in several processes.

:func:`row_wise` adapts a per-row generator to this contract for convenience; it runs
Python once per input row and is therefore slow -- prefer the array form. Put it under
the declaration: ``@flowsql.udtf([...])`` above ``@row_wise`` above ``def f(a, b): yield
...`` (the module attribute is then the adapted function, which is what workers import).

A function that raises is reported as scalar functions are (``scalar.describe_failure``):
an ExecutionError naming the function and the arguments of the first input row that fails
on its own (the batch is retried row by row only after a failure).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from flowsql.errors import CatalogError, ExecutionError, FlowSQLError
from flowsql.planner.schema import Schema
from flowsql.planner.udf import UserFunction
from flowsql.planner.udf_loading import import_function
from flowsql.runtime.user_functions.scalar import describe_failure

TableFunctionResult = tuple[Any, Any]


def load_callable(function: UserFunction) -> Callable[..., TableFunctionResult]:
    """The Python callable ``function.path`` ('pkg.module.fn') names, imported once per
    process."""
    try:
        return import_function(function.path)  # type: ignore[no-any-return]
    except CatalogError as exc:
        raise ExecutionError(f"table function '{function.name}': {exc}") from exc


def call_table_function(fn: Callable[..., TableFunctionResult], function: UserFunction,
                        args: Sequence[pa.Array], fields: Schema, num_rows: int,
                        labels: Sequence[str]) -> tuple[list[pa.Array], np.ndarray]:
    """Call ``fn`` on one batch's argument arrays: (one array per field, parent indices).
    ``labels`` are the arguments as written in SQL, for the error naming a failing row."""
    try:
        result = fn(*args)
    except FlowSQLError:
        raise
    except Exception as exc:
        raise describe_failure(function, fn, args, num_rows, labels, exc) from None
    return _check_result(result, function, fields, num_rows)


def _check_result(result: Any, function: UserFunction, fields: Schema,
                  num_rows: int) -> tuple[list[pa.Array], np.ndarray]:
    name = function.name
    if not (isinstance(result, tuple) and len(result) == 2):
        raise ExecutionError(f"table function '{name}' must return (rows, parent indices), "
                             f"not {type(result).__name__}")
    rows, parents = result
    columns = list(rows.columns) if isinstance(rows, pa.RecordBatch | pa.Table) else list(rows)
    if not columns and len(parents) == 0:
        columns = [pa.array([], type=f.dtype) for f in fields]  # nothing at all returned
    if len(columns) != len(fields):
        raise ExecutionError(f"table function '{name}' returned {len(columns)} columns; it "
                             f"declares {len(fields)}")
    index = np.asarray(parents.to_numpy(zero_copy_only=False)
                       if isinstance(parents, pa.Array | pa.ChunkedArray) else parents)
    if index.size and not np.issubdtype(index.dtype, np.integer):
        raise ExecutionError(f"table function '{name}': parent indices must be integers, "
                             f"not {index.dtype}")
    index = index.astype(np.int64, copy=False)
    if index.size and (index.min() < 0 or index.max() >= num_rows):
        raise ExecutionError(f"table function '{name}': a parent index is outside "
                             f"[0, {num_rows})")
    arrays = []
    for column, field in zip(columns, fields):
        try:
            array = column if isinstance(column, pa.Array | pa.ChunkedArray) else pa.array(
                column, type=field.dtype)
            if isinstance(array, pa.ChunkedArray):
                array = array.combine_chunks()
            if not array.type.equals(field.dtype):
                array = array.cast(field.dtype)
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise ExecutionError(f"table function '{name}': column '{field.name}' is not "
                                 f"{field.dtype}: {exc}") from exc
        if len(array) != len(index):
            raise ExecutionError(f"table function '{name}': column '{field.name}' has "
                                 f"{len(array)} rows but there are {len(index)} parent "
                                 "indices")
        arrays.append(array)
    return arrays, index


def lateral_rows(data: pa.RecordBatch, arrays: list[pa.Array], parents: np.ndarray,
                 outer: bool) -> tuple[pa.RecordBatch, np.ndarray]:
    """Each input row of ``data`` beside its function rows; with ``outer``, input rows
    without any function row once more beside NULLs. Returns the columns of the result
    (input columns, then function columns) and, per result row, its input row."""
    rows = parents
    if outer:
        produced = np.zeros(data.num_rows, dtype=bool)
        produced[parents] = True
        missing = np.flatnonzero(~produced)
        if missing.size:
            rows = np.concatenate([parents, missing])
            arrays = [pa.concat_arrays([a, pa.nulls(missing.size, a.type)]) for a in arrays]
    taken = data.take(pa.array(rows, type=pa.int64()))
    columns = [*taken.columns, *arrays]
    names = [*data.schema.names, *(f"f{i}" for i in range(len(arrays)))]
    return pa.RecordBatch.from_arrays(columns, names=names), rows


def row_wise(fn: Callable[..., Iterable[Sequence[Any]]]) -> Callable[..., TableFunctionResult]:
    """Adapt ``fn(*values) -> iterable of row tuples`` (one call per input row, Python
    values) to the array contract. Slow: Python runs once per row and per value."""

    @functools.wraps(fn)
    def vectorized(*args: pa.Array) -> TableFunctionResult:
        n = len(args[0]) if args else 0
        columns: list[list[Any]] | None = None
        parents: list[int] = []
        values = [a.to_pylist() for a in args]
        for i in range(n):
            for row in fn(*(v[i] for v in values)):
                row = tuple(row) if isinstance(row, tuple | list) else (row,)
                if columns is None:
                    columns = [[] for _ in row]
                for column, value in zip(columns, row):
                    column.append(value)
                parents.append(i)
        return (columns or []), pa.array(parents, type=pa.int64())

    return vectorized


def spark_table_function(name: str, path: str, fields: Sequence[tuple[str, pa.DataType]],
                         width: int, outer: bool, names: Sequence[str], labels: Sequence[str]
                         ) -> Callable[[Iterable[pa.RecordBatch]], Iterable[pa.RecordBatch]]:
    """The function ``DataFrame.mapInArrow`` runs for a LATERAL TABLE on Spark.

    Its batches hold the input's ``width`` columns followed by the evaluated arguments;
    it yields the input columns followed by the function's ``fields``, named ``names``
    (same contract and errors as the local operator). The generated PySpark program calls this by import
    inside Spark's Python workers, so the function is imported there by its path."""
    from flowsql.planner.schema import Field
    from flowsql.planner.udf import TABLE

    function = UserFunction(name, path, TABLE, result_fields=tuple(fields))
    schema = tuple(Field(i, n, t) for i, (n, t) in enumerate(fields))

    def run(batches: Iterable[pa.RecordBatch]) -> Iterable[pa.RecordBatch]:
        fn = load_callable(function)
        for batch in batches:
            if not batch.num_rows:
                continue
            data = batch.select(range(width))
            args = [batch.column(i) for i in range(width, batch.num_columns)]
            arrays, parents = call_table_function(fn, function, args, schema, batch.num_rows,
                                                  labels)
            joined, _ = lateral_rows(data, arrays, parents, outer)
            if joined.num_rows:
                yield joined.rename_columns(list(names))

    return run
