"""Estimated width in bytes of a row, from its column types: what an exchange moves and
what a hash table or sort buffer holds per row."""

from __future__ import annotations

import pyarrow as pa

from flowsql.planner.schema import Schema

#: a string or binary value: its offset plus a short text (TPC-H's names and comments)
VARIABLE_WIDTH = 24.0
#: a nested or otherwise unsized value
OTHER_WIDTH = 16.0


def value_width(dtype: pa.DataType) -> float:
    """Bytes one value of ``dtype`` takes in an Arrow array (validity bits ignored)."""
    if pa.types.is_boolean(dtype):
        return 1.0
    try:
        return float(dtype.bit_width) / 8.0
    except ValueError:
        pass
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype) or \
            pa.types.is_binary(dtype) or pa.types.is_large_binary(dtype):
        return VARIABLE_WIDTH
    return OTHER_WIDTH


def row_width(schema: Schema) -> float:
    """Bytes of one row of ``schema`` (at least one, so an empty row still costs)."""
    return max(1.0, sum(value_width(f.dtype) for f in schema))
