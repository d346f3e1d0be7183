"""The int64 path of decimal + - * gives exactly what Python's decimal arithmetic gives,
and steps aside (None) where it cannot prove the result exact."""

from __future__ import annotations

import decimal

import pyarrow as pa
import pytest

from flowsql.runtime.expressions.decimal_int64 import int64_decimal_op

D = decimal.Decimal
PRICES = pa.array([D("1.25"), None, D("-99999.99"), D("0.01"), D("12345.67")],
                  pa.decimal128(15, 2))
RATES = pa.array([D("0.05"), D("0.10"), None, D("1.00"), D("-0.07")], pa.decimal128(15, 2))


def _expected(op: str, a: list, b: list) -> list:
    fn = {"add": lambda x, y: x + y, "subtract": lambda x, y: x - y,
          "multiply": lambda x, y: x * y}[op]
    return [None if x is None or y is None else fn(x, y) for x, y in zip(a, b)]


@pytest.mark.parametrize("op,result", [("add", pa.decimal128(16, 2)),
                                       ("subtract", pa.decimal128(16, 2)),
                                       ("multiply", pa.decimal128(30, 4))])
def test_arrays_match_exact_arithmetic(op: str, result: pa.DataType) -> None:
    out = int64_decimal_op(op, PRICES, RATES, result)
    assert out is not None and out.type == result
    assert out.to_pylist() == _expected(op, PRICES.to_pylist(), RATES.to_pylist())


def test_scalar_and_sliced_operands() -> None:
    one = pa.scalar(1, pa.int32())
    sliced = RATES.slice(1, 3)
    out = int64_decimal_op("subtract", one, sliced, pa.decimal128(16, 2))
    assert out is not None
    assert out.to_pylist() == [D("0.90"), None, D("0.00")]
    scaled = int64_decimal_op("multiply", pa.scalar(D("1.5"), pa.decimal128(2, 1)), sliced,
                              pa.decimal128(18, 3))
    assert scaled is not None and scaled.to_pylist() == [D("0.150"), None, D("1.500")]


def test_declines_what_it_cannot_prove() -> None:
    big = pa.array([D("9" * 17 + ".9")], pa.decimal128(19, 1))
    assert int64_decimal_op("multiply", big, big, pa.decimal128(38, 2)) is None
    huge = pa.array([D("1" + "0" * 30)], pa.decimal128(38, 0))
    assert int64_decimal_op("add", huge, huge, pa.decimal128(38, 0)) is None
    # the planner reduced the scale: rounding is the Arrow path's job
    assert int64_decimal_op("multiply", PRICES, RATES, pa.decimal128(38, 2)) is None
    assert int64_decimal_op("add", pa.scalar(1), pa.scalar(2), pa.decimal128(5, 0)) is None
    assert int64_decimal_op("add", pa.scalar(None, pa.int32()), RATES,
                            pa.decimal128(16, 2)) is None


def test_wide_types_holding_small_values_take_the_int64_path() -> None:
    """A precision beyond 18 digits: each value's high word is checked (NULL slots not)."""
    wide = pa.array([D("123.4567"), None, D("-0.0001"), D("99999999.9999")],
                    pa.decimal128(30, 4))
    out = int64_decimal_op("multiply", wide, RATES.slice(0, 4), pa.decimal128(38, 6))
    assert out is not None
    assert out.to_pylist() == _expected("multiply", wide.to_pylist(),
                                        RATES.slice(0, 4).to_pylist())
    beyond = pa.array([D("1" + "0" * 20), D("1")], pa.decimal128(30, 0))
    assert int64_decimal_op("add", beyond, beyond, pa.decimal128(31, 0)) is None


def test_types_too_wide_for_the_bound_look_at_the_values() -> None:
    """DECIMAL(15,2) * DECIMAL(16,2) might pass 2^62 by type; these values do not."""
    one_minus = int64_decimal_op("subtract", pa.scalar(1, pa.int32()), RATES,
                                 pa.decimal128(16, 2))
    assert one_minus is not None
    out = int64_decimal_op("multiply", PRICES, one_minus, pa.decimal128(32, 4))
    assert out is not None
    assert out.to_pylist() == _expected("multiply", PRICES.to_pylist(), one_minus.to_pylist())
