"""Values: literal rows typed by the plan's fields."""

from __future__ import annotations

from flowsql.planner import types as T
from flowsql.planner.expressions import Call, Literal
from flowsql.planner.physical import ValuesExec
from flowsql.planner.schema import Field
from tests.harness.operators import drive


def test_values_builds_typed_rows() -> None:
    fields = (Field.fresh("n", T.INT64), Field.fresh("t", T.STRING))
    rows = ((Literal(1, T.INT32), Literal("a", T.STRING)),
            (Literal(None, T.NULL), Literal(None, T.NULL)),
            (Call("add", (Literal(2, T.INT64), Literal(3, T.INT64)), T.INT64),
             Literal("c", T.STRING)))
    out = drive(ValuesExec(fields, rows, 3.0))
    assert out.schema.types == [T.INT64, T.STRING]
    assert out.to_pydict() == {"n": [1, None, 5], "t": ["a", None, "c"]}
