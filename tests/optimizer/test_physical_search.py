"""The physical search picks each alternative when its cost says so: the build side, the
parallelism of the whole query, a partitioning reused by the operator above, enforcers
only where a requirement is unmet, and UDF costs that make parallel work worth it."""

from __future__ import annotations

from pathlib import Path

import flowsql
from flowsql.planner import types as T
from flowsql.planner.expressions import UdfCall
from flowsql.planner.physical import HashJoinExec, PhysicalPlan
from flowsql.planner.udf import FunctionHints, UserFunction
from tests.harness.tpch import TPCH_TABLES
from tests.optimizer import planbuilder as pb
from tests.optimizer.searchplans import exchanges, lines, planned, sized

BIG = sized("big", 5_000_000, "b_key", "b_value")
SMALL = sized("small", 2_000, "s_key", "s_value")
ORDERS = sized("orders", 1_500_000, "o_orderkey", "o_custkey")
LINEITEM = sized("lineitem", 6_000_000, "l_orderkey", "l_quantity")


def joins(plan: PhysicalPlan) -> list[HashJoinExec]:
    found = [plan] if isinstance(plan, HashJoinExec) else []
    return found + [j for child in plan.inputs for j in joins(child)]


def big_small_join(small_on_left: bool) -> pb.LogicalPlan:
    b, s = pb.scan(BIG), pb.scan(SMALL)
    left, right = (s, b) if small_on_left else (b, s)
    return pb.join(left, right, "inner", pb.eq(pb.col(b, "b_key"), pb.col(s, "s_key")))


def test_the_build_side_is_the_cheaper_one_either_way_round() -> None:
    assert [j.build_side for j in joins(planned(big_small_join(False), 1))] == ["right"]
    assert [j.build_side for j in joins(planned(big_small_join(True), 1))] == ["left"]


def test_a_join_partitioning_serves_the_aggregate_above_without_a_second_exchange() -> None:
    o, li = pb.scan(ORDERS), pb.scan(LINEITEM)
    joined = pb.join(o, li, "inner", pb.eq(pb.col(o, "o_orderkey"), pb.col(li, "l_orderkey")))
    grouped = pb.aggregate(joined, ["o_orderkey", "o_custkey"],
                           q=pb.agg("sum", pb.col(joined, "l_quantity")))
    plan = planned(grouped, settings={"optimizer.broadcast-threshold-rows": "0"})
    assert exchanges(plan) == ["Exchange[gather]", "Exchange[hash] keys=[l_orderkey]",
                               "Exchange[hash] keys=[o_orderkey]"]
    shape = lines(plan)
    aggregate = next(i for i, line in enumerate(shape) if line.startswith("HashAggregate"))
    assert shape[aggregate + 1].startswith("HashJoin")  # grouped where the join ran
    assert sum(line.startswith("HashAggregate") for line in shape) == 1


def test_an_aggregate_partitioning_serves_the_join_above_without_a_second_exchange() -> None:
    o, li = pb.scan(ORDERS), pb.scan(LINEITEM)
    per_order = pb.aggregate(li, ["l_orderkey"], q=pb.agg("sum", pb.col(li, "l_quantity")))
    joined = pb.join(o, per_order, "inner",
                     pb.eq(pb.col(o, "o_orderkey"), pb.col(per_order, "l_orderkey")))
    counted = pb.aggregate(joined, [], n=pb.agg("count_star"))
    plan = planned(counted, settings={"optimizer.broadcast-threshold-rows": "0"})
    shape = lines(plan)
    join = next(i for i, line in enumerate(shape) if line.startswith("HashJoin"))
    below_join = shape[join + 1:]
    # the join's right input is the (final) aggregate itself, no exchange between them
    assert any(line.startswith("HashAggregate groups=[l_orderkey]") for line in below_join)
    assert exchanges(plan).count("Exchange[hash] keys=[o_orderkey]") == 1
    assert sum(line.startswith("Exchange[hash]") for line in shape) == 2


def test_a_small_query_runs_on_one_subtask_and_a_large_one_on_the_workers() -> None:
    default = {"optimizer.small-query-on-one-subtask": "true"}
    small = pb.aggregate(pb.scan(SMALL), ["s_key"], n=pb.agg("count_star"))
    assert exchanges(planned(small, settings=default)) == []
    # SF 10's orders and lineitem
    o = pb.scan(sized("orders", 15_000_000, "o_orderkey", "o_custkey"))
    li = pb.scan(sized("lineitem", 60_000_000, "l_orderkey", "l_quantity"))
    joined = pb.join(o, li, "inner", pb.eq(pb.col(o, "o_orderkey"), pb.col(li, "l_orderkey")))
    large = pb.aggregate(joined, [], n=pb.agg("count_star"))
    assert "Exchange[gather]" in exchanges(planned(large, settings=default))


def test_the_cost_of_a_udf_makes_parallel_work_worth_it() -> None:
    """A projection calling a UDF over 50 thousand rows: cheap (the default cost per row)
    it runs on one subtask; at a thousand times that, halving the calls pays for the
    exchanges."""
    table = sized("t", 50_000, "k", "v")

    def query(cost_per_row: float | None) -> pb.LogicalPlan:
        function = UserFunction("slow", "tests.udfs.slow", result_type=T.INT64,
                                hints=FunctionHints(cost_per_row=cost_per_row))
        scan = pb.scan(table)
        return pb.project(scan, y=UdfCall(function, (pb.col(scan, "v"),), T.INT64))

    default = {"optimizer.small-query-on-one-subtask": "true"}
    assert exchanges(planned(query(None), settings=default)) == []
    assert exchanges(planned(query(10_000.0), settings=default)) == ["Exchange[gather]"]


def test_enforcers_only_where_a_requirement_is_unmet() -> None:
    """A sort over an aggregate over a join, all keyed alike: one exchange per input of
    the join, the gather for the sort, and nothing else."""
    o, li = pb.scan(ORDERS), pb.scan(LINEITEM)
    joined = pb.join(o, li, "inner", pb.eq(pb.col(o, "o_orderkey"), pb.col(li, "l_orderkey")))
    grouped = pb.aggregate(joined, ["l_orderkey"], q=pb.agg("sum", pb.col(joined, "l_quantity")))
    plan = planned(pb.sort(grouped, "l_orderkey"),
                   settings={"optimizer.broadcast-threshold-rows": "0"})
    assert exchanges(plan) == ["Exchange[gather]", "Exchange[hash] keys=[l_orderkey]",
                               "Exchange[hash] keys=[o_orderkey]"]
    assert lines(plan)[:2] == ["Sort [l_orderkey ASC NULLS LAST]", "Exchange[gather]"]


def test_explain_verbose_shows_costs_properties_and_the_alternatives(tpch_dir: Path) -> None:
    session = flowsql.connect(parallelism=2)
    try:
        for name in TPCH_TABLES:
            session.sql(f"CREATE TABLE {name} WITH ('path'='{tpch_dir / (name + '.parquet')}')")
        sql = ("SELECT o_custkey, count(*) FROM orders JOIN customer ON o_custkey = c_custkey "
               "GROUP BY o_custkey ORDER BY o_custkey")
        plain = session.sql(f"EXPLAIN {sql}").plan_text or ""
        assert "cost=" not in plain and "Alternatives" not in plain
        text = session.sql(f"EXPLAIN VERBOSE {sql}").plan_text or ""
        physical = text.split("== Physical Plan ==")[1].split("==")[0].strip().splitlines()
        assert all(" cost=" in line and " dist=" in line for line in physical)
        assert "order=[o_custkey ASC NULLS LAST]" in physical[0]
        alternatives = text.split("== Physical Alternatives At The Root ==")[1].strip()
        marked = [line for line in alternatives.splitlines() if line.startswith("*")]
        assert len(marked) == 1
        assert "whole query on one subtask" in alternatives
        result = session.sql(sql).to_arrow()
        assert result.num_rows == 1000 and result.column(0).to_pylist() == sorted(
            result.column(0).to_pylist())
    finally:
        session.close()
