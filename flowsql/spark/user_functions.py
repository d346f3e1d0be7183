"""User-defined functions on Spark: scalar functions as Arrow UDFs, aggregates as
grouped-aggregate Arrow UDFs (``pyspark.sql.functions.arrow_udf``, Spark 4.1).

Spark hands a UDF's batches to Python worker processes as Arrow, and an Arrow UDF receives
them as ``pyarrow.Array`` values, so the user's function sees what the local engine gives
it (one array per argument, one call per batch; one call per group for an aggregate, or
for a class-form aggregate one accumulator per group: ``create_accumulator``, one
``accumulate`` with the group's rows, ``get_value`` -- Spark's own partial aggregation
does not apply to Python aggregates, so ``merge`` is not needed there). What Spark sends to its workers is
the small wrapper object (a class of this module holding the function's import path and
result type), never the user's code: each worker imports the function by its path.

Workers must therefore import both ``flowsql`` and the function's module. They inherit
``PYTHONPATH`` from the SparkContext's environment, which :func:`worker_python_path`
extends with the directories those modules were imported from in this process.
"""

from __future__ import annotations

import importlib
import os
import sys
import warnings
from pathlib import Path
from typing import Any

import pyarrow as pa

from flowsql.planner.udf import UserFunction
from flowsql.planner.udf_accumulator import aggregate_group, instance, is_accumulator_class
from flowsql.planner.udf_loading import import_function

__all__ = ["aggregate_udf", "scalar_udf", "worker_python_path"]


class _ScalarCall:
    """The Arrow UDF body of a scalar function: arrays in, an array out."""

    def __init__(self, function: UserFunction) -> None:
        self.function = function

    def __call__(self, *arrays: pa.Array) -> pa.Array:
        code = import_function(self.function.path)
        length = len(arrays[0]) if arrays else 0
        try:
            result = code(*arrays)
        except Exception as e:
            raise UserFunctionFailure(_failure(self.function, code, arrays, e)) from None
        if isinstance(result, pa.ChunkedArray):
            result = result.combine_chunks()
        if not isinstance(result, pa.Array):
            result = pa.array(result, type=self.function.result_type)
        if len(result) != length:
            raise ValueError(f"function {self.function.name} returned {len(result)} values "
                             f"for {length} input rows (a scalar function returns one value "
                             "per row)")
        return result


class _AggregateCall:
    """The grouped-aggregate Arrow UDF body: a group's arrays in, one value out."""

    def __init__(self, function: UserFunction) -> None:
        self.function = function

    def __call__(self, *arrays: pa.Array) -> Any:
        code = import_function(self.function.path)
        try:
            if is_accumulator_class(code):  # a class form: one accumulator over the group
                result = aggregate_group(instance(self.function.path), arrays)
            else:
                result = code(*arrays)
        except Exception as e:
            raise UserFunctionFailure(
                f"aggregate function {self.function.name} failed on a group of "
                f"{len(arrays[0]) if arrays else 0} rows: {type(e).__name__}: {e}") from None
        if hasattr(result, "item") and callable(result.item):  # a numpy scalar
            result = result.item()
        return result if isinstance(result, pa.Scalar) else pa.scalar(
            result, self.function.result_type)


class UserFunctionFailure(RuntimeError):
    """Raised in a Spark worker when a user function fails; its message names the function
    and, for a scalar function, the first failing row (what the user sees)."""


def _failure(function: UserFunction, code: Any, arrays: tuple[pa.Array, ...],
             error: Exception) -> str:
    """Retried row by row (only after a failure): the first row that fails alone."""
    for row in range(len(arrays[0]) if arrays else 0):
        try:
            code(*[a.slice(row, 1) for a in arrays])
        except Exception as row_error:
            values = ", ".join(repr(a[row].as_py()) for a in arrays)
            return (f"function {function.name} failed on the input row with arguments "
                    f"({values}): {type(row_error).__name__}: {row_error}")
    return f"function {function.name} failed on a batch: {type(error).__name__}: {error}"


def scalar_udf(path: str, name: str, result_type: str) -> Any:
    """An Arrow UDF calling the scalar function at ``path`` (``result_type``: Spark DDL)."""
    from pyspark.sql import functions as F
    from pyspark.sql.functions import ArrowUDFType

    function = _function(path, name, result_type)
    with _quiet():
        return F.arrow_udf(_ScalarCall(function), result_type,  # type: ignore[call-overload]
                           ArrowUDFType.SCALAR)


def aggregate_udf(path: str, name: str, result_type: str) -> Any:
    """A grouped-aggregate Arrow UDF calling the aggregate at ``path``."""
    from pyspark.sql import functions as F
    from pyspark.sql.functions import ArrowUDFType

    function = _function(path, name, result_type)
    with _quiet():
        return F.arrow_udf(_AggregateCall(function), result_type,  # type: ignore[call-overload]
                           ArrowUDFType.GROUPED_AGG)


def _quiet() -> warnings.catch_warnings:  # type: ignore[type-arg]
    """PySpark prefers type hints to an explicit UDF type; a wrapper object has none."""
    context = warnings.catch_warnings()
    warnings.simplefilter("ignore", UserWarning)
    return context


def _function(path: str, name: str, result_type: str) -> UserFunction:
    """A description carrying what the workers need: the path, name and result type."""
    from pyspark.sql import SparkSession

    spark = SparkSession.getActiveSession()
    if spark is not None:
        context = spark.sparkContext
        context.environment["PYTHONPATH"] = worker_python_path(
            [path.rsplit(".", 1)[0], "flowsql"], context.environment.get("PYTHONPATH"))
        if (context.master or "").startswith("local") and "PYSPARK_PYTHON" not in os.environ:
            # local workers run this interpreter (with pyarrow), not whatever `python3` is
            context.pythonExec = sys.executable
    import_function(path)
    from pyspark.sql.pandas.types import to_arrow_type
    from pyspark.sql.types import _parse_datatype_string

    return UserFunction(name, path, result_type=to_arrow_type(
        _parse_datatype_string(result_type)))


def worker_python_path(modules: list[str], current: str | None = None) -> str:
    """``current`` (a PYTHONPATH) extended with the directory each of ``modules`` is
    imported from here (the parent of its top-level package), so a Python worker started
    with it imports the same code."""
    entries = [e for e in (current or os.environ.get("PYTHONPATH", "")).split(os.pathsep) if e]
    for module in modules:
        top = module.split(".")[0]
        loaded = sys.modules.get(top) or importlib.import_module(top)
        location = getattr(loaded, "__file__", None)
        if location is None:
            continue
        root = Path(location).resolve().parent
        if Path(location).name == "__init__.py":
            root = root.parent
        if str(root) not in entries:
            entries.append(str(root))
    return os.pathsep.join(entries)
