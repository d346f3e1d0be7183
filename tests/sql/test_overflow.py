"""Arithmetic that leaves its type is an error naming the operation and the type, whether
the optimizer folds it (literals) or the runtime computes it (columns); results that fit
are exact, as in DuckDB."""

from __future__ import annotations

from decimal import Decimal

import duckdb
import pytest

import flowsql
from flowsql.errors import ExecutionError

BIG = 9223372036854775807
D38 = "99999999999999999999999999999999999999"


@pytest.mark.parametrize(("sql", "message"), [
    (f"SELECT {BIG} + 1", f"integer overflow in ({BIG} + 1) (BIGINT)"),
    (f"SELECT CAST({BIG} AS BIGINT) * 2", f"integer overflow in ({BIG} * 2) (BIGINT)"),
    (f"SELECT CAST(-{BIG} - 1 AS BIGINT) - 1",
     f"integer overflow in (-{BIG + 1} - 1) (BIGINT)"),
    (f"SELECT CAST({D38} AS DECIMAL(38,0)) * 10",
     f"decimal overflow: the result of ({D38} * 10) does not fit DECIMAL(38, 0)"),
    (f"SELECT CAST({D38} AS DECIMAL(38,0)) + 1",
     f"decimal overflow: the result of ({D38} + 1) does not fit DECIMAL(38, 0)"),
])
def test_overflow_of_constants_is_an_error_naming_operation_and_type(sql: str,
                                                                     message: str) -> None:
    with pytest.raises(duckdb.OutOfRangeException):
        duckdb.sql(sql).fetchall()
    with pytest.raises(ExecutionError) as error:
        flowsql.connect().sql(sql).to_arrow()
    assert str(error.value).endswith(message)


def test_overflow_of_column_values_is_detected_by_the_runtime() -> None:
    session = flowsql.connect()
    values = f"(VALUES (CAST(1 AS BIGINT)), (CAST({BIG} AS BIGINT))) AS t(x)"
    with pytest.raises(ExecutionError) as error:
        session.sql(f"SELECT x + 1 FROM {values}").to_arrow()
    assert str(error.value).endswith("(BIGINT)") and "integer overflow" in str(error.value)
    decimals = f"(VALUES (CAST(1 AS DECIMAL(38,0))), (CAST({D38} AS DECIMAL(38,0)))) AS t(x)"
    with pytest.raises(ExecutionError, match=r"decimal overflow: .* does not fit "
                                             r"DECIMAL\(38, 0\)"):
        session.sql(f"SELECT x * 10 FROM {decimals}").to_arrow()


def test_arithmetic_that_fits_is_exact_at_38_digits() -> None:
    session = flowsql.connect()
    rows = session.sql(f"SELECT {BIG} - 1 AS a, CAST({D38[:-1]} AS DECIMAL(38,0)) * 10 AS b, "
                       f"CAST({D38} AS DECIMAL(38,0)) - 1 AS c").to_arrow().to_pylist()
    expected = duckdb.sql(f"SELECT {BIG} - 1 AS a, CAST({D38[:-1]} AS DECIMAL(38,0)) * 10 "
                          f"AS b, CAST({D38} AS DECIMAL(38,0)) - 1 AS c").fetchall()
    assert rows == [{"a": BIG - 1, "b": Decimal(D38[:-1] + "0"), "c": Decimal(D38[:-1] + "8")}]
    assert [tuple(r.values()) for r in rows] == expected


def test_integer_literals_beyond_bigint_are_decimal_and_beyond_38_digits_double() -> None:
    session = flowsql.connect()
    rows = session.sql("SELECT 9223372036854775808 AS d, "
                       "1234567890123456789012345678901234567890 AS f").to_arrow()
    assert [str(f.type) for f in rows.schema] == ["decimal128(38, 0)", "double"]
    assert rows.to_pylist() == [{"d": Decimal("9223372036854775808"), "f": 1.2345678901234568e39}]
