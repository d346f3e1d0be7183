"""Set operations (UNION / INTERSECT / EXCEPT [ALL]) against DuckDB over the same tables."""

from __future__ import annotations

import pyarrow as pa
import pytest

from flowsql.planner import types as T
from flowsql.planner.physical import SetOpExec
from flowsql.planner.schema import Field
from tests.harness.operators import assert_rows, drive, duck, leaf

SET_LEFT = pa.table({"a": pa.array([1, 1, 1, 2, None, None, 3], pa.int64()),
                     "b": pa.array(["x", "x", "x", "y", None, None, "z"])})
SET_RIGHT = pa.table({"a": pa.array([1, 1, None, 4, 2], pa.int64()),
                      "b": pa.array(["x", "x", None, "w", "q"])})


@pytest.mark.parametrize("kind", ["union", "intersect", "except"])
@pytest.mark.parametrize("all_rows", [False, True])
def test_set_operations(kind: str, all_rows: bool) -> None:
    ln, lb = leaf(SET_LEFT)
    rn, rb = leaf(SET_RIGHT)
    fields = (Field.fresh("a", T.INT64), Field.fresh("b", T.STRING))
    out = drive(SetOpExec(ln, rn, kind, all_rows, fields, 1.0), lb, rb)
    op = f"{kind.upper()}{' ALL' if all_rows else ''}"
    assert_rows(out, duck(f"SELECT * FROM l {op} SELECT * FROM r", l=SET_LEFT, r=SET_RIGHT))
