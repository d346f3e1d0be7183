"""Aggregates (grouped, global, DISTINCT, FILTER, empty input) and window functions."""

from __future__ import annotations

import pyarrow as pa

from flowsql.planner import types as T
from flowsql.planner.expressions import Frame, FrameBound, Literal, SortKey, WindowCall
from flowsql.planner.physical import HashAggregateExec, WindowExec
from flowsql.planner.schema import Field
from flowsql.sql.functions import window_type

from .builders import agg, call, col, lit, scan
from .compare import check


def aggregate(input, groups, aggs) -> HashAggregateExec:  # type: ignore[no-untyped-def]
    group_fields = tuple(Field.fresh(f"g{i}", e.dtype) for i, e in enumerate(groups))
    agg_fields = tuple(Field.fresh(f"a{i}", a.dtype) for i, a in enumerate(aggs))
    return HashAggregateExec(input, tuple(groups), group_fields, tuple(aggs), agg_fields, 10.0)


def test_grouped_aggregates(tables, duck) -> None:  # type: ignore[no-untyped-def]
    t = scan(tables["t"])
    k, price, qty, x, d, s = (col(t, n) for n in ("k", "price", "qty", "x", "d", "s"))
    plan = aggregate(t, [col(t, "grp")], [
        agg("count_star"), agg("count", k), agg("count", k, distinct=True), agg("sum", price),
        agg("avg", price), agg("min", d), agg("max", s),
        agg("sum", qty, filter=call("gt", qty, lit(2, T.INT32))),
        agg("count_star", filter=call("gt", qty, lit(4, T.INT32))),
        agg("stddev_samp", x), agg("var_pop", x), agg("bool_or", call("gt", x, lit(2.0, T.FLOAT64))),
        agg("sum", qty, distinct=True), agg("avg", qty), agg("avg", qty, distinct=True),
    ])
    check(plan, duck, """
        SELECT grp, count(*), count(k), count(DISTINCT k), sum(price), avg(price), min(d),
               max(s), sum(qty) FILTER (WHERE qty > 2), count(*) FILTER (WHERE qty > 4),
               stddev_samp(x), var_pop(x), bool_or(x > 2), sum(DISTINCT qty), avg(qty),
               avg(DISTINCT qty)
        FROM t GROUP BY grp""")


def test_group_by_expression_and_distinct(tables, duck) -> None:  # type: ignore[no-untyped-def]
    t = scan(tables["t"])
    by_parity = aggregate(t, [call("modulo", col(t, "k"), lit(2, T.INT64))],
                          [agg("sum", col(t, "price"))])
    check(by_parity, duck, "SELECT k % 2, sum(price) FROM t GROUP BY k % 2")
    distinct = aggregate(t, [col(t, "grp"), col(t, "k")], [])
    check(distinct, duck, "SELECT DISTINCT grp, k FROM t")


def test_aggregates_over_empty_input(tables, duck) -> None:  # type: ignore[no-untyped-def]
    e = scan(tables["empty"])
    aggs = [agg("count_star"), agg("count", col(e, "k")), agg("sum", col(e, "price")),
            agg("avg", col(e, "x")), agg("min", col(e, "d")),
            agg("count", col(e, "k"), distinct=True)]
    result = check(aggregate(e, [], aggs), duck,
                   "SELECT count(*), count(k), sum(price), avg(x), min(d), count(DISTINCT k) "
                   "FROM empty")
    assert result.num_rows == 1
    grouped = check(aggregate(e, [col(e, "grp")], aggs[:2]), duck,
                    "SELECT grp, count(*), count(k) FROM empty GROUP BY grp")
    assert grouped.num_rows == 0


def _window(name: str, args: tuple, partition: tuple = (), order: tuple = (),  # type: ignore[type-arg]
            frame: Frame | None = None) -> WindowCall:
    dtype = window_type(name, [a.dtype for a in args])
    assert dtype is not None
    return WindowCall(name, args, partition, order, frame, dtype)


def _bound(kind: str, offset: int | None = None) -> FrameBound:
    return FrameBound(kind, offset)


def test_window_functions(tables, duck) -> None:  # type: ignore[no-untyped-def]
    t = scan(tables["t"])
    grp, id_, qty, price, x, s = (col(t, n) for n in ("grp", "id", "qty", "price", "x", "s"))
    by_id = (SortKey(id_),)
    qty_desc = (SortKey(qty, ascending=False, nulls_first=False),)
    running = Frame("range", _bound("unbounded_preceding"), _bound("current_row"))
    whole = Frame("rows", _bound("unbounded_preceding"), _bound("unbounded_following"))
    calls = [
        _window("row_number", (), (grp,), by_id),
        _window("rank", (), (), qty_desc),
        _window("dense_rank", (), (), qty_desc),
        _window("sum", (price,), (grp,), by_id,
                Frame("rows", _bound("preceding", 1), _bound("current_row"))),
        _window("avg", (x,), (grp,), by_id, running),
        _window("lag", (price, Literal(1, T.INT64)), (grp,), by_id),
        _window("lead", (s, Literal(2, T.INT64), Literal("none", T.STRING)), (), by_id),
        _window("ntile", (Literal(3, T.INT64),), (), by_id),
        _window("count_star", (), (grp,), (), whole),
        _window("first_value", (s,), (grp,), by_id, running),
        _window("sum", (qty,), (), (SortKey(qty),),
                Frame("range", _bound("preceding", 2), _bound("following", 1))),
        _window("percent_rank", (), (), (SortKey(qty, nulls_first=True),)),
        _window("cume_dist", (), (), (SortKey(qty, nulls_first=True),)),
        _window("max", (price,), (grp,), (), whole),
    ]
    fields = tuple(Field.fresh(f"w{i}", c.dtype) for i, c in enumerate(calls))
    plan = WindowExec(t, tuple(calls), fields, 12.0)
    check(plan, duck, """
        SELECT *,
          row_number() OVER (PARTITION BY grp ORDER BY id),
          rank() OVER (ORDER BY qty DESC NULLS LAST),
          dense_rank() OVER (ORDER BY qty DESC NULLS LAST),
          sum(price) OVER (PARTITION BY grp ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW),
          avg(x) OVER (PARTITION BY grp ORDER BY id),
          lag(price, 1) OVER (PARTITION BY grp ORDER BY id),
          lead(s, 2, 'none') OVER (ORDER BY id),
          ntile(3) OVER (ORDER BY id),
          count(*) OVER (PARTITION BY grp),
          first_value(s) OVER (PARTITION BY grp ORDER BY id),
          sum(qty) OVER (ORDER BY qty RANGE BETWEEN 2 PRECEDING AND 1 FOLLOWING),
          percent_rank() OVER (ORDER BY qty NULLS FIRST),
          cume_dist() OVER (ORDER BY qty NULLS FIRST),
          max(price) OVER (PARTITION BY grp)
        FROM t""")


def test_window_result_types_follow_the_plan(tables) -> None:  # type: ignore[no-untyped-def]
    from .compare import run

    t = scan(tables["t"])
    call_ = _window("rank", (), (), (SortKey(col(t, "id")),))
    plan = WindowExec(t, (call_,), (Field.fresh("r", call_.dtype),), 12.0)
    assert run(plan).schema.field("r").type == pa.int64()
