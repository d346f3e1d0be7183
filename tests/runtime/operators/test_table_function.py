"""LATERAL TABLE(f(x)) as an operator, with functions given directly by import path:
full results against DuckDB's generate_series / unnest equivalents."""

from __future__ import annotations

import pyarrow as pa
import pytest

from flowsql.errors import ExecutionError
from flowsql.planner import types as T
from flowsql.planner.expressions import Literal
from flowsql.planner.physical import TableFunctionExec
from flowsql.planner.schema import Field
from flowsql.planner.udf import TABLE, UserFunction
from flowsql.runtime.changelog import ROW_KIND, with_row_kinds
from flowsql.runtime.operator import MemoryBudget, OperatorContext
from flowsql.runtime.registry import create_operator
from tests.harness.operators import assert_rows, drive, duck, leaf

DATA = pa.table({
    "k": pa.array([1, 2, 3, 4, 5, 6], pa.int64()),
    "n": pa.array([2, 0, None, 3, 1, -1], pa.int64()),
    "s": pa.array(["a bb", "", None, "ccc", "d  e f", "g"]),
})


def function(name: str, *fields: tuple[str, pa.DataType]) -> UserFunction:
    return UserFunction(name, f"tests.udfs.tables.{name}", TABLE, result_fields=fields)


SERIES = function("series", ("i", T.INT64), ("down", T.INT64))
WORDS = function("words", ("w", T.STRING), ("len", T.INT32))


def lateral(fn: UserFunction, arg: int, outer: bool = False, chunk: int = 2):  # type: ignore[no-untyped-def]
    node, batches = leaf(DATA, chunk)
    fields = tuple(Field.fresh(n, t) for n, t in fn.result_fields)
    exec_node = TableFunctionExec(node, fn, (node.fields[arg].ref(),), fields, outer, 1.0)
    return exec_node, batches


@pytest.mark.parametrize("chunk", [1, 2, 6])
def test_cross_form_matches_generate_series(chunk: int) -> None:
    node, batches = lateral(SERIES, 1, chunk=chunk)
    expected = duck("SELECT k, n, s, i, n - i + 1 FROM t, generate_series(1, n) AS g(i)",
                    t=DATA)
    assert_rows(drive(node, batches), expected)


def test_left_form_keeps_rows_without_output_once_with_nulls() -> None:
    node, batches = lateral(SERIES, 1, outer=True)
    expected = duck("SELECT k, n, s, i, n - i + 1 FROM t LEFT JOIN LATERAL "
                    "(SELECT * FROM generate_series(1, n)) AS g(i) ON TRUE", t=DATA)
    out = drive(node, batches)
    assert out.num_rows == 2 + 1 + 1 + 3 + 1 + 1
    assert_rows(out, expected)


def test_string_function_with_list_columns_matches_unnest() -> None:
    node, batches = lateral(WORDS, 2)
    expected = duck("SELECT k, n, s, w, length(w)::INT FROM t, "
                    "unnest(string_split(s, ' ')) AS u(w) WHERE w <> ''", t=DATA)
    assert_rows(drive(node, batches), expected)


def test_row_wise_form() -> None:
    node, batches = leaf(DATA)
    pairs = function("pairs", ("a", T.INT64), ("b", T.INT64))
    fields = tuple(Field.fresh(n, t) for n, t in pairs.result_fields)
    args = (node.fields[0].ref(), node.fields[1].ref())
    out = drive(TableFunctionExec(node, pairs, args, fields, False, 1.0), batches)
    expected = duck("SELECT k, n, s, k, n FROM t WHERE n IS NOT NULL UNION ALL "
                    "SELECT k, n, s, n, k FROM t WHERE n IS NOT NULL", t=DATA)
    assert_rows(out, expected)


def test_literal_argument_reaches_the_function_repeated() -> None:
    node, batches = leaf(DATA)
    fields = tuple(Field.fresh(n, t) for n, t in SERIES.result_fields)
    exec_node = TableFunctionExec(node, SERIES, (Literal(2, T.INT64),), fields, False, 1.0)
    expected = duck("SELECT k, n, s, i, 3 - i FROM t, generate_series(1, 2) AS g(i)", t=DATA)
    assert_rows(drive(exec_node, batches), expected)


def test_row_kinds_follow_their_input_row() -> None:
    node, batches = lateral(SERIES, 1, outer=True)
    batch = DATA.to_batches()[0]
    kinds = pa.array([0, 3, 0, 1, 2, 3], pa.int8())
    op = create_operator(node)
    op.open(OperatorContext("test", {}, MemoryBudget(None)))
    (result,) = op.process_batch(0, with_row_kinds(batch, kinds))
    assert result.schema.names[-1] == ROW_KIND
    got = sorted(zip(result.column(0).to_pylist(), result.column(3).to_pylist(),
                     result.column(ROW_KIND).to_pylist()), key=lambda r: (r[0], r[1] or 0))
    assert got == [(1, 1, 0), (1, 2, 0), (2, None, 3), (3, None, 0),
                   (4, 1, 1), (4, 2, 1), (4, 3, 1), (5, 1, 2), (6, None, 3)]


def test_failure_names_function_and_input_row() -> None:
    fails = function("fails_on_three", ("x", T.INT64))
    node, batches = leaf(DATA, 6)
    fields = (Field.fresh("x", T.INT64),)
    exec_node = TableFunctionExec(node, fails, (node.fields[0].ref(),), fields, False, 1.0)
    with pytest.raises(ExecutionError, match=r"function fails_on_three failed on the input row "
                       r"with k = 3: ValueError: three is not allowed"):
        drive(exec_node, batches)


def test_wrong_result_shape_is_an_error() -> None:
    node, batches = leaf(DATA)
    wrong = function("series", ("i", T.INT64))  # the function returns two columns
    exec_node = TableFunctionExec(node, wrong, (node.fields[1].ref(),),
                                  (Field.fresh("i", T.INT64),), False, 1.0)
    with pytest.raises(ExecutionError, match="returned 2 columns; it declares 1"):
        drive(exec_node, batches)
