"""The vectorized numeric form agrees with ``statistic_number`` value for value."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

from flowsql.planner.statistics import statistic_number
from flowsql.runtime.statistics.numeric_form import numeric_values

CASES = [
    pa.array([1, None, -5, 2**40], pa.int64()),
    pa.array([1, 2], pa.int8()),
    pa.array([0.5, None, -1e300], pa.float64()),
    pa.array([decimal.Decimal("1.25"), decimal.Decimal("-3.10"), None], pa.decimal128(6, 2)),
    pa.array([dt.date(1970, 1, 1), dt.date(1998, 12, 1), dt.date(1901, 3, 4)], pa.date32()),
    pa.array([dt.datetime(2024, 2, 29, 13, 5, 7, 123456), None], pa.timestamp("us")),
    pa.array([dt.datetime(2024, 2, 29, 13, 5, 7), dt.datetime(1960, 1, 1)], pa.timestamp("s")),
    pa.array([dt.datetime(2024, 2, 29, 13, 5, 7, 1000)], pa.timestamp("ms")),
    pa.array([dt.datetime(2024, 1, 1, 12, tzinfo=dt.UTC)],
             pa.timestamp("us", tz="Europe/Berlin")),
    pa.array([dt.time(13, 5, 7, 250)], pa.time64("us")),
    pa.array([True, False, None], pa.bool_()),
]


@pytest.mark.parametrize("array", CASES, ids=lambda a: str(a.type))
def test_agrees_with_statistic_number(array: pa.Array) -> None:
    expected = [statistic_number(v, array.type) for v in array.to_pylist() if v is not None]
    assert numeric_values(array).tolist() == expected


def test_strings_have_no_numeric_form() -> None:
    with pytest.raises(TypeError):
        numeric_values(pa.array(["a"]))
