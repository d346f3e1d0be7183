"""The ordering part of the sanity check: which order each node delivers, and a merge join
or sort aggregate over input not sorted on its keys is rejected, naming the node."""

from __future__ import annotations

import pyarrow as pa
import pytest

from flowsql.errors import PlanError
from flowsql.optimizer.sanity_check import sanity_check
from flowsql.optimizer.sanity_check.ordering import check_ordering, delivered_ordering
from flowsql.planner import types as T
from flowsql.planner.expressions import AggCall, Cast, Expr, Literal, SortKey
from flowsql.planner.physical import (
    ExchangeExec,
    FilterExec,
    HashAggregateExec,
    HashJoinExec,
    LimitExec,
    PhysicalPlan,
    ProjectExec,
    SortAggregateExec,
    SortExec,
    SortMergeJoinExec,
    TopNExec,
    ValuesExec,
)
from flowsql.planner.properties import UNORDERED, Ordering, OrderKey
from flowsql.planner.schema import Field
from tests.harness.operators import leaf


def _table() -> ValuesExec:
    node, _ = leaf(pa.table({"a": pa.array([], pa.int32()), "b": pa.array([], pa.string()),
                             "c": pa.array([], pa.int64())}))
    return node


def _sort(plan: PhysicalPlan, *keys: Expr, ascending: bool = True,
          nulls_first: bool = False) -> SortExec:
    return SortExec(plan, tuple(SortKey(k, ascending, nulls_first) for k in keys), 1.0)


def _join(left: PhysicalPlan, right: PhysicalPlan, lkeys: tuple[Expr, ...],
          rkeys: tuple[Expr, ...], kind: str = "inner") -> SortMergeJoinExec:
    return SortMergeJoinExec(left, right, kind, lkeys, rkeys, None, 1.0)


def _aggregate(plan: PhysicalPlan, *keys: Expr) -> SortAggregateExec:
    fields = tuple(Field.fresh(f"g{i}", k.dtype) for i, k in enumerate(keys))
    count = AggCall("count_star", (), T.INT64, False, None)
    return SortAggregateExec(plan, keys, fields, (count,), (Field.fresh("n", T.INT64),), 1.0)


def test_merge_join_over_sorted_inputs_delivers_its_left_keys() -> None:
    left, right = _table(), _table()
    la, lb = left.fields[0].ref(), left.fields[1].ref()
    ra, rb = right.fields[0].ref(), right.fields[1].ref()
    join = _join(_sort(left, la, lb, left.fields[2].ref()), _sort(right, ra, rb), (la, lb),
                 (ra, rb), "full")
    check_ordering(join)
    assert delivered_ordering(join) == Ordering((OrderKey(la.cid), OrderKey(lb.cid)))


def test_sorted_prefix_filter_limit_and_forward_exchange_keep_the_order() -> None:
    left, right = _table(), _table()
    la, ra = left.fields[0].ref(), right.fields[0].ref()
    kept = LimitExec(FilterExec(_sort(left, la, left.fields[1].ref()), Literal(True, T.BOOL),
                                1.0), 10, 0, 1.0)
    forwarded = ExchangeExec(_sort(right, ra), "forward", (), 1.0)
    check_ordering(_join(kept, forwarded, (la,), (ra,)))


def test_a_widening_cast_of_a_sorted_column_is_sorted() -> None:
    left, right = _table(), _table()
    la, rc = left.fields[0].ref(), right.fields[2].ref()
    check_ordering(_join(_sort(left, la), _sort(right, rc), (Cast(la, T.INT64),), (rc,)))


@pytest.mark.parametrize("broken", ["unsorted", "descending", "nulls_first", "other_column",
                                    "hash_exchange_above_sort", "expression_key"])
def test_merge_join_over_unsorted_right_input_is_rejected(broken: str) -> None:
    left, right = _table(), _table()
    la, ra, rc = left.fields[0].ref(), right.fields[0].ref(), right.fields[2].ref()
    sorted_right: PhysicalPlan = {
        "unsorted": right,
        "descending": _sort(right, ra, ascending=False),
        "nulls_first": _sort(right, ra, nulls_first=True),
        "other_column": _sort(right, rc),
        "hash_exchange_above_sort": ExchangeExec(_sort(right, ra), "hash", (ra,), 1.0),
        "expression_key": _sort(right, ra),
    }[broken]
    rkey: Expr = Cast(ra, T.STRING) if broken == "expression_key" else ra
    join = _join(_sort(left, la), sorted_right, (la,), (rkey,))
    plan = ProjectExec(join, (la,), (left.fields[0],), 1.0)
    with pytest.raises(PlanError, match=r"SortMergeJoin \(at Project > SortMergeJoin\) needs "
                                        r"its right input sorted"):
        check_ordering(plan)


def test_sort_aggregate_needs_its_group_keys_in_order() -> None:
    table = _table()
    a, b = table.fields[0].ref(), table.fields[1].ref()
    good = _aggregate(_sort(table, a, b), a, b)
    check_ordering(good)
    assert delivered_ordering(good) == Ordering(tuple(OrderKey(f.cid) for f in good.group_fields))
    with pytest.raises(PlanError, match=r"SortAggregate \(at SortAggregate\) needs its input"):
        check_ordering(_aggregate(_sort(table, b, a), a, b))
    with pytest.raises(PlanError, match="SortAggregate"):
        check_ordering(_aggregate(table, a))
    # no group keys: nothing to sort
    check_ordering(_aggregate(table))


def test_project_renames_the_order_and_forgets_it_from_a_dropped_key_on() -> None:
    table = _table()
    a, b = table.fields[0].ref(), table.fields[1].ref()
    renamed = (Field.fresh("x", T.INT32), Field.fresh("y", T.STRING))
    project = ProjectExec(_sort(table, a, b), (a, b), renamed, 1.0)
    assert delivered_ordering(project) == Ordering((OrderKey(renamed[0].cid),
                                                    OrderKey(renamed[1].cid)))
    check_ordering(_aggregate(project, renamed[0].ref(), renamed[1].ref()))
    dropped = ProjectExec(_sort(table, a, b), (b,), (renamed[1],), 1.0)
    assert delivered_ordering(dropped) == UNORDERED
    with pytest.raises(PlanError, match="SortAggregate"):
        check_ordering(_aggregate(dropped, renamed[1].ref()))


def test_top_n_delivers_its_keys_and_hash_operators_nothing() -> None:
    left, right = _table(), _table()
    la, ra = left.fields[0].ref(), right.fields[0].ref()
    top = TopNExec(left, (SortKey(la, False, True),), 5, 0, 1.0)
    assert delivered_ordering(top) == Ordering((OrderKey(la.cid, False, True),))
    hashed = HashJoinExec(_sort(left, la), _sort(right, ra), "inner", (la,), (ra,), None,
                          "right", 1.0)
    assert delivered_ordering(hashed) == UNORDERED
    grouped = HashAggregateExec(_sort(left, la), (la,), (left.fields[0],), (), (), 1.0)
    assert delivered_ordering(grouped) == UNORDERED
    assert delivered_ordering(ExchangeExec(_sort(left, la), "gather", (), 1.0)) == UNORDERED


def test_the_sanity_check_runs_the_ordering_check() -> None:
    left, right = _table(), _table()
    la, ra = left.fields[0].ref(), right.fields[0].ref()
    sanity_check(_join(_sort(left, la), _sort(right, ra), (la,), (ra,)), {}, streaming=False)
    with pytest.raises(PlanError, match="left input"):
        sanity_check(_join(left, _sort(right, ra), (la,), (ra,)), {}, streaming=False)
