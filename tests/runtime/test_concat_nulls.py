"""concat() over columns with NULLs keeps one output row per input row (regression)."""

from __future__ import annotations

import pyarrow as pa

from flowsql.planner import types as T
from flowsql.planner.expressions import Call, Cast
from flowsql.planner.schema import Field
from flowsql.runtime.expressions import compile_expr


def test_concat_with_nulls_in_both_arguments() -> None:
    s = pa.array(["a", None, "c", None, "e", "f"])
    k = pa.array([1, 2, None, None, 5, None], pa.int32())
    batch = pa.record_batch([s, k], names=["s", "k"])
    fields = (Field.fresh("s", T.STRING), Field.fresh("k", T.INT32))
    expr = Call("concat", (fields[0].ref(), Cast(fields[1].ref(), T.STRING)), T.STRING)
    assert compile_expr(expr, fields)(batch).to_pylist() == ["a1", "2", "c", "", "e5", "f"]
