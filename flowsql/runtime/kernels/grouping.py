"""Key columns as Acero's group-by accepts them.

A column of SQL type NULL (``GROUP BY NULL``, ``SELECT NULL UNION SELECT NULL``) has no
hash kernel; it becomes an all-NULL int8 column, which groups identically. The output is
cast back to the field type when batches are built.
"""

from __future__ import annotations

import pyarrow as pa


def groupable(column: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    if pa.types.is_null(column.type):
        return column.cast(pa.int8())
    return column
