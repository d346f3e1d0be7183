"""User-defined functions the Nexmark queries call (registered by the runner)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

import flowsql


@flowsql.udf(result_type="BIGINT")
def count_char(text: pa.Array, char: pa.Array | pa.Scalar) -> pa.Array:
    """q14's function: how often the character ``char`` occurs in ``text`` (NULL text:
    NULL). ``char`` is the same for every row (a literal in q14)."""
    pattern = char if isinstance(char, pa.Scalar) else (char[0] if len(char) else None)
    if pattern is None or not pattern.is_valid:
        return pa.nulls(len(text), pa.int64())
    return pc.count_substring(text, pattern.as_py()).cast(pa.int64())
