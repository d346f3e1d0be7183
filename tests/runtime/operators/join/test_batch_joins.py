"""Hash and nested-loop joins of every kind against DuckDB over the same tables."""

from __future__ import annotations

import datetime
import decimal

import pyarrow as pa
import pytest

from flowsql.errors import ExecutionError, ResourceExhausted
from flowsql.planner import types as T
from flowsql.planner.expressions import Call, Expr, conjoin
from flowsql.planner.physical import HashJoinExec, NestedLoopJoinExec, ValuesExec
from flowsql.planner.schema import Field
from tests.harness.operators import assert_rows, drive, duck, leaf

D = decimal.Decimal

L = pa.table({
    "k": pa.array([1, 2, 2, None, 4, 5, 7], pa.int32()),
    "c": pa.array(["a", "b", "b", "a", None, "c", "a"]),
    "x": pa.array([10, 20, 21, 30, 40, 50, 60], pa.int64()),
})
R = pa.table({
    "k": pa.array([2, 2, 3, None, 5, 5, 1], pa.int64()),
    "c": pa.array(["b", "z", "a", "a", "c", None, "q"]),
    "y": pa.array([15, 25, 35, 45, 55, 65, 5], pa.int64()),
})
ROW_KINDS = ["inner", "left", "right", "full"]
SQL_KIND = {"inner": "JOIN", "left": "LEFT JOIN", "right": "RIGHT JOIN", "full": "FULL JOIN"}


def _sides(left: pa.Table = L, right: pa.Table = R
           ) -> tuple[ValuesExec, list[pa.RecordBatch], ValuesExec, list[pa.RecordBatch]]:
    ln, lb = leaf(left)
    rn, rb = leaf(right)
    return ln, lb, rn, rb


def _residual(ln: ValuesExec, rn: ValuesExec) -> Expr:
    return Call("lt", (ln.fields[2].ref(), rn.fields[2].ref()), T.BOOL)


def _hash(kind: str, ln: ValuesExec, rn: ValuesExec, keys: list[tuple[int, int]],
          residual: Expr | None, build: str = "right", **kw: object) -> HashJoinExec:
    return HashJoinExec(ln, rn, kind, tuple(ln.fields[i].ref() for i, _ in keys),
                        tuple(rn.fields[j].ref() for _, j in keys), residual, build, 1.0,
                        **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ROW_KINDS)
@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("build", ["left", "right"])
def test_hash_join_row_kinds(kind: str, residual: bool, build: str) -> None:
    ln, lb, rn, rb = _sides()
    node = _hash(kind, ln, rn, [(0, 0)], _residual(ln, rn) if residual else None, build)
    out = drive(node, lb, rb)
    cond = "l.k = r.k" + (" AND l.x < r.y" if residual else "")
    assert_rows(out, duck(f"SELECT * FROM l {SQL_KIND[kind]} r ON {cond}", l=L, r=R))


@pytest.mark.parametrize("kind", ["semi", "anti"])
@pytest.mark.parametrize("residual", [False, True])
def test_hash_join_semi_anti(kind: str, residual: bool) -> None:
    ln, lb, rn, rb = _sides()
    node = _hash(kind, ln, rn, [(0, 0), (1, 1)], _residual(ln, rn) if residual else None)
    out = drive(node, lb, rb)
    cond = "r.k = l.k AND r.c = l.c" + (" AND l.x < r.y" if residual else "")
    neg = "NOT " if kind == "anti" else ""
    assert_rows(out, duck(f"SELECT * FROM l WHERE {neg}EXISTS (SELECT 1 FROM r WHERE {cond})",
                          l=L, r=R))


@pytest.mark.parametrize("kind", ["semi", "anti", "mark"])
@pytest.mark.parametrize("build", ["left", "right"])
@pytest.mark.parametrize("condition", ["l.x < r.y", "r.c <> l.c"])
def test_semi_anti_mark_with_residual_on_either_build_side(kind: str, build: str,
                                                          condition: str) -> None:
    """The residual reads only some columns of each side (they alone are gathered), and
    a left row's candidates arrive in several probe batches (built left, a row already
    found skips the residual for its later candidates)."""
    right = pa.table({
        "k": pa.array([2, 1, 2, 5, 2, 1, 5, 7, 2], pa.int64()),
        "c": pa.array(["b", "a", "z", "c", "b", None, "d", "a", "q"]),
        "y": pa.array([15, 5, 25, 45, 30, 11, 60, 61, 22], pa.int64()),
    })
    ln, lb, rn, rb = _sides(right=right)
    x_or_c = 2 if "x" in condition else 1
    op = "lt" if "<" in condition else "neq"
    residual = Call(op, (ln.fields[x_or_c].ref(), rn.fields[x_or_c].ref()), T.BOOL)
    mark = Field.fresh("m", T.BOOL) if kind == "mark" else None
    node = _hash(kind, ln, rn, [(0, 0)], residual, build,
                 **({"mark": mark} if mark is not None else {}))
    out = drive(node, lb, rb)
    exists = f"EXISTS (SELECT 1 FROM r WHERE r.k = l.k AND {condition})"
    sql = {"semi": f"SELECT * FROM l WHERE {exists}",
           "anti": f"SELECT * FROM l WHERE NOT {exists}",
           "mark": f"SELECT *, {exists} FROM l"}[kind]
    assert_rows(out, duck(sql, l=L, r=right))


@pytest.mark.parametrize("residual", [False, True])
def test_hash_mark_join_is_exists(residual: bool) -> None:
    ln, lb, rn, rb = _sides()
    mark = Field.fresh("m", T.BOOL)
    node = _hash("mark", ln, rn, [(0, 0)], _residual(ln, rn) if residual else None,
                 mark=mark)
    cond = "r.k = l.k" + (" AND l.x < r.y" if residual else "")
    out = drive(node, lb, rb)
    assert_rows(out, duck(f"SELECT *, EXISTS (SELECT 1 FROM r WHERE {cond}) FROM l", l=L, r=R))


@pytest.mark.parametrize("right_rows", [slice(0, 7), slice(0, 3), slice(0, 0), slice(4, 6)])
def test_null_aware_mark_and_anti_are_in_and_not_in(right_rows: slice) -> None:
    right = R.slice(right_rows.start, right_rows.stop - right_rows.start)
    ln, lb, rn, rb = _sides(right=right)
    mark = Field.fresh("m", T.BOOL)
    out = drive(_hash("mark", ln, rn, [(0, 0)], None, mark=mark, null_aware=True), lb, rb)
    assert_rows(out, duck("SELECT *, k IN (SELECT k FROM r) FROM l", l=L, r=right))
    out = drive(_hash("anti", ln, rn, [(0, 0)], None, null_aware=True), lb, rb)
    assert_rows(out, duck("SELECT * FROM l WHERE k NOT IN (SELECT k FROM r)", l=L, r=right))


@pytest.mark.parametrize("residual", [False, True])
def test_correlated_null_aware_mark(residual: bool) -> None:
    ln, lb, rn, rb = _sides()
    mark = Field.fresh("m", T.BOOL)
    node = _hash("mark", ln, rn, [(0, 0), (1, 1)], _residual(ln, rn) if residual else None,
                 mark=mark, null_aware=True)
    out = drive(node, lb, rb)
    extra = " AND l.x < r.y" if residual else ""
    assert_rows(out, duck(f"SELECT *, k IN (SELECT r.k FROM r WHERE r.c = l.c{extra}) FROM l",
                          l=L, r=R))
    anti = _hash("anti", ln, rn, [(0, 0), (1, 1)], _residual(ln, rn) if residual else None,
                 null_aware=True)
    assert_rows(drive(anti, lb, rb),
                duck(f"SELECT * FROM l WHERE k NOT IN (SELECT r.k FROM r WHERE r.c = l.c{extra})",
                     l=L, r=R))


def test_single_join_is_left_join_or_fails_on_two_matches() -> None:
    unique = R.filter(pa.array([True, False, True, True, True, False, True]))
    ln, lb, rn, rb = _sides(right=unique)
    out = drive(_hash("single", ln, rn, [(0, 0)], None), lb, rb)
    assert_rows(out, duck("SELECT * FROM l LEFT JOIN r ON l.k = r.k", l=L, r=unique))
    ln, lb, rn, rb = _sides()
    with pytest.raises(ExecutionError, match="more than one row"):
        drive(_hash("single", ln, rn, [(0, 0)], None), lb, rb)


KEY_TYPES = {
    "decimal": (pa.array([D("1.10"), None, D("2.00")], pa.decimal128(15, 2)),
                pa.array([D("2.00"), D("1.10"), D("1.10"), None], pa.decimal128(12, 2))),
    "date": (pa.array([datetime.date(2020, 1, 1), None, datetime.date(1995, 3, 15)]),
             pa.array([datetime.date(1995, 3, 15), None, datetime.date(2020, 1, 1),
                       datetime.date(2020, 1, 2)])),
    "string": (pa.array(["AIR", None, "MAIL"]),
               pa.array(["MAIL", "AIR", None, "SHIP"], pa.string())),
    "int_vs_decimal": (pa.array([1, 2, None], pa.int32()),
                       pa.array([D("1.00"), D("2.50"), D("2.00"), None], pa.decimal128(5, 2))),
    "bool": (pa.array([True, None, False]), pa.array([False, True, None, True])),
}


@pytest.mark.parametrize("key_type", sorted(KEY_TYPES))
def test_hash_join_key_types(key_type: str) -> None:
    lk, rk = KEY_TYPES[key_type]
    left = pa.table({"k": lk, "i": pa.array(range(len(lk)), pa.int64())})
    right = pa.table({"k": rk, "j": pa.array(range(len(rk)), pa.int64())})
    ln, lb, rn, rb = _sides(left, right)
    out = drive(_hash("full", ln, rn, [(0, 0)], None), lb, rb)
    assert_rows(out, duck("SELECT * FROM l FULL JOIN r ON l.k = r.k", l=left, r=right))


def test_hash_join_empty_sides() -> None:
    ln, lb, rn, _ = _sides()
    out = drive(_hash("left", ln, rn, [(0, 0)], None), lb, [])
    assert_rows(out, duck("SELECT * FROM l LEFT JOIN r ON l.k = r.k", l=L, r=R.slice(0, 0)))
    out = drive(_hash("right", ln, rn, [(0, 0)], None), [], _sides()[3])
    assert_rows(out, duck("SELECT * FROM l RIGHT JOIN r ON l.k = r.k", l=L.slice(0, 0), r=R))


def test_hash_join_accounts_memory() -> None:
    ln, lb, rn, rb = _sides()
    with pytest.raises(ResourceExhausted, match="memory-budget"):
        drive(_hash("inner", ln, rn, [(0, 0)], None), lb, rb, budget=64)


def _nl_condition(ln: ValuesExec, rn: ValuesExec, with_equality: bool) -> Expr:
    less = Call("lt", (ln.fields[2].ref(), rn.fields[2].ref()), T.BOOL)
    if not with_equality:
        return less
    same = Call("eq", (ln.fields[1].ref(), rn.fields[1].ref()), T.BOOL)
    return conjoin([less, same])  # type: ignore[return-value]


NL_SQL = {False: "l.x < r.y", True: "l.x < r.y AND l.c = r.c"}


@pytest.mark.parametrize("kind", ROW_KINDS)
@pytest.mark.parametrize("eq", [False, True])
def test_nested_loop_row_kinds(kind: str, eq: bool) -> None:
    ln, lb, rn, rb = _sides()
    out = drive(NestedLoopJoinExec(ln, rn, kind, _nl_condition(ln, rn, eq), 1.0), lb, rb)
    assert_rows(out, duck(f"SELECT * FROM l {SQL_KIND[kind]} r ON {NL_SQL[eq]}", l=L, r=R))


def test_nested_loop_cross_product_and_semi_anti_mark() -> None:
    ln, lb, rn, rb = _sides()
    out = drive(NestedLoopJoinExec(ln, rn, "inner", None, 1.0), lb, rb)
    assert_rows(out, duck("SELECT * FROM l, r", l=L, r=R))
    cond = _nl_condition(ln, rn, True)
    for kind, sql in (("semi", "SELECT * FROM l WHERE EXISTS (SELECT 1 FROM r WHERE {c})"),
                      ("anti", "SELECT * FROM l WHERE NOT EXISTS (SELECT 1 FROM r WHERE {c})"),
                      ("mark", "SELECT *, EXISTS (SELECT 1 FROM r WHERE {c}) FROM l")):
        mark = Field.fresh("m", T.BOOL) if kind == "mark" else None
        out = drive(NestedLoopJoinExec(ln, rn, kind, cond, 1.0, mark=mark), lb, rb)
        assert_rows(out, duck(sql.format(c=NL_SQL[True]), l=L, r=R))


def test_nested_loop_null_aware_mark_is_in() -> None:
    ln, lb, rn, rb = _sides()
    cond = Call("eq", (ln.fields[0].ref(), rn.fields[0].ref()), T.BOOL)
    mark = Field.fresh("m", T.BOOL)
    out = drive(NestedLoopJoinExec(ln, rn, "mark", cond, 1.0, mark=mark, null_aware=True),
                lb, rb)
    assert_rows(out, duck("SELECT *, k IN (SELECT k FROM r) FROM l", l=L, r=R))
    out = drive(NestedLoopJoinExec(ln, rn, "anti", cond, 1.0, null_aware=True), lb, rb)
    assert_rows(out, duck("SELECT * FROM l WHERE k NOT IN (SELECT k FROM r)", l=L, r=R))


def test_nested_loop_single_fails_on_two_matches() -> None:
    ln, lb, rn, rb = _sides()
    cond = Call("eq", (ln.fields[0].ref(), rn.fields[0].ref()), T.BOOL)
    with pytest.raises(ExecutionError, match="more than one row"):
        drive(NestedLoopJoinExec(ln, rn, "single", cond, 1.0), lb, rb)
