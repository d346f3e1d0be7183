"""Arrow types -> Spark SQL type names, as written in ``Column.cast`` and schema DDL.

The planner's Arrow types are the contract; the compiled program casts every computed value
to the Spark type named here, and the runner casts Spark's Arrow output back to the plan's
exact Arrow type. Types Spark cannot hold as a column (intervals, durations) are rejected with
a PlanError so the failure names the type instead of surfacing as a Spark analysis error.
"""

from __future__ import annotations

import re

import pyarrow as pa

from flowsql.errors import PlanError
from flowsql.planner import types as T

_SIMPLE: dict[pa.DataType, str] = {
    pa.bool_(): "boolean",
    pa.int8(): "tinyint", pa.int16(): "smallint", pa.int32(): "int", pa.int64(): "bigint",
    pa.uint8(): "smallint", pa.uint16(): "int", pa.uint32(): "bigint",
    pa.uint64(): "decimal(20,0)",
    pa.float16(): "float", pa.float32(): "float", pa.float64(): "double",
    pa.date32(): "date", pa.date64(): "date",
    pa.binary(): "binary", pa.large_binary(): "binary", pa.binary_view(): "binary",
    pa.null(): "void",
}


def spark_type(t: pa.DataType) -> str:
    """The Spark SQL spelling of an Arrow type (``decimal(15,2)``, ``timestamp_ntz``...)."""
    if T.is_string(t):
        return "string"
    if pa.types.is_dictionary(t):
        return spark_type(t.value_type)
    if T.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    if pa.types.is_timestamp(t):
        # Spark's TIMESTAMP is instant-like (shown in the session time zone); a timestamp
        # without a zone is TIMESTAMP_NTZ.
        return "timestamp" if t.tz is not None else "timestamp_ntz"
    name = _SIMPLE.get(t)
    if name is None:
        raise PlanError(f"the Spark engine does not support columns of type {T.sql_name(t)}")
    return name


def ddl_schema(schema: pa.Schema) -> str:
    """A Spark DDL schema string (``\\`a\\` int, \\`b\\` string``) for text-format readers."""
    return ", ".join(f"{quote_name(f.name)} {spark_type(f.type)}" for f in schema)


def quote_name(name: str) -> str:
    """A column name as ``F.col`` reads it: backtick-quoted unless a plain identifier, so
    dots and spaces are not read as nesting."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        return name
    return "`" + name.replace("`", "``") + "`"
