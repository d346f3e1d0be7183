"""WHERE conjunctions calling a UDF are evaluated in order on the surviving rows: the same
mask as evaluating every conjunct on every row (NULLs count as false), with the UDF given
only the rows the earlier conjuncts kept."""

from __future__ import annotations

import pyarrow as pa

from flowsql.planner import types as T
from flowsql.planner.expressions import Call, Literal, UdfCall
from flowsql.planner.schema import Field
from flowsql.planner.udf import FunctionHints, UserFunction
from flowsql.runtime.expressions import compile_expr, compile_predicate
from tests.udfs import counted

FIELDS = (Field.fresh("x", T.INT64), Field.fresh("y", T.INT64))
BATCH = pa.record_batch([pa.array([1, 2, 3, None, 5, 6, 7, 8], pa.int64()),
                         pa.array([0, 1, None, 1, 1, 0, 1, 1], pa.int64())], names=["x", "y"])
SLOW_ODD = UserFunction("slow_odd", "tests.udfs.counted.slow_odd", result_type=T.BOOL,
                        hints=FunctionHints(cost_per_row=100.0))


def _plain(pred: Call) -> list[bool]:
    values = compile_expr(pred, FIELDS)(BATCH).to_pylist()
    return [v is True for v in values]


def test_udf_sees_only_surviving_rows_and_mask_is_unchanged() -> None:
    x, y = FIELDS[0].ref(), FIELDS[1].ref()
    udf = UdfCall(SLOW_ODD, (x,), T.BOOL)
    pred = Call("and", (Call("eq", (y, Literal(1, T.INT64)), T.BOOL), udf,
                        Call("gt", (x, Literal(1, T.INT64)), T.BOOL)), T.BOOL)
    counted.ROWS.clear()
    expected = _plain(pred)
    assert counted.ROWS["slow_odd"] == 8  # the expression form: every row
    counted.ROWS.clear()
    mask = compile_predicate(pred, FIELDS)(BATCH).to_pylist()
    assert mask == expected == [False, False, False, False, True, False, True, False]
    assert counted.ROWS["slow_odd"] == 5  # y = 1 holds on rows 2, 4, 5, 7, 8


def test_no_row_left_skips_the_udf() -> None:
    x = FIELDS[0].ref()
    pred = Call("and", (Call("gt", (x, Literal(100, T.INT64)), T.BOOL),
                        UdfCall(SLOW_ODD, (x,), T.BOOL)), T.BOOL)
    counted.ROWS.clear()
    assert compile_predicate(pred, FIELDS)(BATCH).to_pylist() == [False] * 8
    assert counted.ROWS["slow_odd"] == 0
