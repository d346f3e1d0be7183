"""Scalar sample functions (vectorized: pyarrow arrays in, an array of the same length out)."""

from __future__ import annotations

import itertools

import pyarrow as pa
import pyarrow.compute as pc

import flowsql


@flowsql.udf(result_type="BIGINT")
def times_two(x: pa.Array) -> pa.Array:
    return pc.multiply(x, 2)


@flowsql.udf(result_type="DOUBLE", arg_types=["DOUBLE", "DOUBLE"], cost_per_row=5.0)
def weighted(x: pa.Array, w: pa.Array) -> pa.Array:
    return pc.multiply(x, w)


@flowsql.udf(result_type="VARCHAR")
def shout(s: pa.Array) -> list[str | None]:
    """Returns a Python list: anything pyarrow.array accepts is a result."""
    return [None if v is None else v.upper() + "!" for v in s.to_pylist()]


@flowsql.udf(result_type="BOOLEAN", selectivity=0.1)
def is_even(x: pa.Array) -> pa.Array:
    return pc.equal(pc.bit_wise_and(x, 1), 0)


@flowsql.udf(result_type="BIGINT")
def add(x: pa.Array, y: pa.Array | pa.Scalar) -> pa.Array:
    """``y`` may be a constant (a pyarrow Scalar)."""
    return pc.add(x, y)


_counter = itertools.count()


@flowsql.udf(result_type="BIGINT", deterministic=False)
def next_id(x: pa.Array) -> pa.Array:
    """Non-deterministic: a process-wide counter (one value per row)."""
    return pa.array([next(_counter) for _ in range(len(x))], pa.int64())


@flowsql.udf(result_type="BIGINT")
def fails_on_seven(x: pa.Array) -> pa.Array:
    """Raises when any row's value is 7."""
    if pc.any(pc.equal(x, 7)).as_py():
        raise ValueError("seven is not allowed")
    return x


@flowsql.udf(result_type="BIGINT")
def wrong_length(x: pa.Array) -> pa.Array:
    return pa.array([1], pa.int64())


@flowsql.udf(result_type="BIGINT")
def wrong_type(x: pa.Array) -> pa.Array:
    return pa.array(["a"] * len(x), pa.string())


def not_decorated(x: pa.Array) -> pa.Array:
    return x


NOT_A_FUNCTION = 42
