"""Window functions and frames against DuckDB over the same table."""

from __future__ import annotations

import datetime
import decimal

import pyarrow as pa
import pytest

from flowsql.planner import types as T
from flowsql.planner.expressions import Frame, FrameBound, Literal, SortKey, WindowCall
from flowsql.planner.physical import WindowExec
from flowsql.planner.schema import Field
from tests.harness.operators import assert_rows, drive, duck, leaf

D = decimal.Decimal

DATA = pa.table({
    "p": pa.array(["a", "a", "a", "b", "b", None, "a", "b", None, "a"]),
    "o": pa.array([1, 2, 2, 5, None, 3, 4, 7, 3, None], pa.int64()),
    "v": pa.array([D("1.50"), None, D("2.00"), D("4.25"), D("1.00"), D("3.00"), D("0.50"),
                   None, D("7.00"), D("2.50")], pa.decimal128(15, 2)),
    "s": pa.array(["k", "b", None, "z", "a", "m", "c", "d", "e", "q"]),
    "d": pa.array([datetime.date(2020, 1, d) for d in (1, 3, 3, 9, 2, 5, 4, 8, 6, 7)]),
    "id": pa.array(range(10), pa.int64()),
})
COLUMNS = {"p": 0, "o": 1, "v": 2, "s": 3, "d": 4, "id": 5}


def _b(text: str) -> FrameBound:
    words = text.split()
    if words[0].isdigit():
        return FrameBound(words[1].lower(), Literal(int(words[0]), T.INT64))
    return FrameBound("_".join(words).lower())


def _window(calls: list[tuple[str, list[str], str, T.pa.DataType, str | None]],
            partition: list[str], order: list[tuple[str, bool, bool]]
            ) -> tuple[WindowExec, list[pa.RecordBatch]]:
    node, batches = leaf(DATA, chunk=3)
    refs = {name: node.fields[i].ref() for name, i in COLUMNS.items()}
    keys = tuple(SortKey(refs[c], asc, nf) for c, asc, nf in order)
    built = []
    for name, args, _, dtype, frame in calls:
        arg_exprs = tuple(refs[a] if a in refs else Literal(int(a), T.INT64) for a in args)
        fr = None
        if frame is not None:
            mode, rest = frame.split(" BETWEEN ", 1)
            lo, hi = rest.split(" AND ")
            fr = Frame(mode.lower(), _b(lo), _b(hi))
        built.append(WindowCall(name, arg_exprs, tuple(refs[p] for p in partition), keys, fr,
                                dtype))
    fields = tuple(Field.fresh(f"w{i}", c.dtype) for i, c in enumerate(built))
    return WindowExec(node, tuple(built), fields, 1.0), batches


def _check(calls: list[tuple], partition: list[str],
           order: list[tuple[str, bool, bool]]) -> None:
    node, batches = _window(calls, partition, order)
    over = []
    if partition:
        over.append("PARTITION BY " + ", ".join(partition))
    if order:
        over.append("ORDER BY " + ", ".join(
            f"{c} {'ASC' if a else 'DESC'} NULLS {'FIRST' if nf else 'LAST'}"
            for c, a, nf in order))
    selects = []
    for _, _, sql, _, frame in calls:
        selects.append(f"{sql} OVER ({' '.join(over)}{' ' + frame if frame else ''})")
    expected = duck(f"SELECT *, {', '.join(selects)} FROM t", t=DATA)
    assert_rows(drive(node, batches), expected)


RANKING = [
    ("row_number", [], "row_number()", T.INT64, None),
    ("rank", [], "rank()", T.INT64, None),
    ("dense_rank", [], "dense_rank()", T.INT64, None),
    ("percent_rank", [], "percent_rank()", T.FLOAT64, None),
    ("cume_dist", [], "cume_dist()", T.FLOAT64, None),
    ("ntile", ["3"], "ntile(3)", T.INT64, None),
    ("lag", ["v"], "lag(v)", pa.decimal128(15, 2), None),
    ("lead", ["s", "2"], "lead(s, 2)", T.STRING, None),
    ("lag", ["o", "1", "id"], "lag(o, 1, id)", T.INT64, None),
]


@pytest.mark.parametrize(("partition", "order"), [
    (["p"], [("o", True, False)]),
    (["p"], [("o", False, True), ("id", True, False)]),
    ([], [("d", True, False)]),
])
def test_ranking_and_offsets(partition: list[str], order: list[tuple[str, bool, bool]]) -> None:
    calls = RANKING if len(order) > 1 or order[0][0] == "d" else \
        [c for c in RANKING if c[0] not in ("row_number", "lag", "lead", "ntile")]
    _check(calls, partition, order)


FRAMES = [
    None,
    "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW",
    "ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING",
    "ROWS BETWEEN 2 PRECEDING AND 1 PRECEDING",
    "ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING",
    "RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW",
    "RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING",
    "RANGE BETWEEN 1 PRECEDING AND 2 FOLLOWING",
    "RANGE BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING",
]


def _framed(frame: str | None) -> list[tuple]:
    return [
        ("sum", ["v"], "sum(v)", pa.decimal128(38, 2), frame),
        ("sum", ["o"], "sum(o)", T.INT64, frame),
        ("count", ["v"], "count(v)", T.INT64, frame),
        ("count_star", [], "count(*)", T.INT64, frame),
        ("avg", ["v"], "avg(v)", T.FLOAT64, frame),
        ("min", ["s"], "min(s)", T.STRING, frame),
        ("max", ["v"], "max(v)", pa.decimal128(15, 2), frame),
        ("first_value", ["s"], "first_value(s)", T.STRING, frame),
        ("last_value", ["v"], "last_value(v)", pa.decimal128(15, 2), frame),
        ("nth_value", ["id", "2"], "nth_value(id, 2)", T.INT64, frame),
    ]


@pytest.mark.parametrize("frame", FRAMES)
@pytest.mark.parametrize("order", [[("o", True, False)], [("o", False, True)]])
def test_frame_aggregates(frame: str | None, order: list[tuple[str, bool, bool]]) -> None:
    # rows frames need a total order to be deterministic
    full_order = order + [("id", True, False)] if frame and frame.startswith("ROWS") else order
    _check(_framed(frame), ["p"], full_order)


def test_aggregates_without_order_cover_the_partition() -> None:
    _check(_framed(None), ["p"], [])
