"""GROUP BY queries under a tiny ``execution.memory-budget``: TPC-H's aggregates, grouping
sets and user-defined aggregates give the answers of DuckDB (or of an unlimited budget),
spill under ``io.tmp.dirs``, and leave no spill file behind."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

import flowsql
from flowsql.errors import ResourceExhausted
from flowsql.tpch.queries import load_query
from flowsql.tpch.verify import compare_tables
from tests.conftest import TPCH_TABLES, create_table_sql


@pytest.fixture
def tiny(tpch_dir: Path, tmp_path: Path) -> Iterator[flowsql.Session]:
    """A session over TPC-H SF 0.01 whose spill files go to ``tmp_path``."""
    session = flowsql.connect()
    for name in TPCH_TABLES:
        session.sql(create_table_sql(name, tpch_dir))
    session.sql(f"SET 'io.tmp.dirs' = '{tmp_path}'")
    yield session
    session.close()


def _files(tmp_path: Path) -> list[str]:
    return [name for _, _, names in os.walk(tmp_path) for name in names]


def _check(session: flowsql.Session, duck: duckdb.DuckDBPyConnection, sql: str,
           budget: str, tmp_path: Path, ordered: bool = False) -> None:
    session.sql(f"SET 'execution.memory-budget' = '{budget}'")
    actual = session.sql(sql).to_arrow()
    differences = compare_tables(actual, duck.sql(sql).to_arrow_table(), ordered=ordered)
    assert not differences, "\n".join(differences)
    assert _files(tmp_path) == []


@pytest.mark.parametrize("budget", ["64kb", "1mb"])
def test_tpch_q1_under_a_tiny_budget(tiny: flowsql.Session, duckdb_tpch, budget: str,
                                     tmp_path: Path) -> None:
    _check(tiny, duckdb_tpch, load_query(1), budget, tmp_path, ordered=True)


# The GROUP BYs of Q18 and Q13 on their own (the full queries' joins hold their build
# sides, more than these budgets, until the joins spill too).
Q18_GROUPS = ("SELECT l_orderkey, sum(l_quantity) AS q, count(*) AS n, avg(l_extendedprice) "
              "AS p FROM lineitem GROUP BY l_orderkey")
Q18_HAVING = ("SELECT l_orderkey FROM lineitem GROUP BY l_orderkey "
              "HAVING sum(l_quantity) > 300")
Q13_COUNTS = ("SELECT c_count, count(*) AS custdist FROM (SELECT o_custkey, count(o_orderkey) "
              "AS c_count FROM orders WHERE o_comment NOT LIKE '%special%requests%' "
              "GROUP BY o_custkey) AS c_orders GROUP BY c_count "
              "ORDER BY custdist DESC, c_count DESC")
HELD = ("SELECT l_suppkey, l_returnflag, count(DISTINCT l_partkey) AS parts, "
        "sum(DISTINCT l_quantity) AS q, stddev_samp(l_discount) AS sd, min(l_shipmode) AS m "
        "FROM lineitem GROUP BY l_suppkey, l_returnflag")


@pytest.mark.parametrize("budget", ["64kb", "1mb"])
@pytest.mark.parametrize("sql", [Q18_GROUPS, Q18_HAVING, Q13_COUNTS, HELD],
                         ids=["q18-groups", "q18-having", "q13-counts", "held"])
def test_tpch_aggregates_spill(tiny: flowsql.Session, duckdb_tpch, sql: str, budget: str,
                               tmp_path: Path) -> None:
    _check(tiny, duckdb_tpch, sql, budget, tmp_path, ordered="ORDER BY" in sql)


@pytest.mark.parametrize("grouping,distinct", [
    ("ROLLUP (l_returnflag, l_linestatus, l_orderkey)", False),
    ("CUBE (l_returnflag, l_suppkey)", False),
    ("GROUPING SETS ((l_orderkey), (l_shipmode, l_returnflag), ())", False),
    # a DISTINCT aggregate holds its arguments: no empty set, which could not be split
    ("GROUPING SETS ((l_orderkey), (l_shipmode, l_returnflag), (l_suppkey))", True),
])
def test_grouping_sets_spill(tiny: flowsql.Session, duckdb_tpch, grouping: str,
                             distinct: bool, tmp_path: Path) -> None:
    columns = [c for c in ("l_returnflag", "l_linestatus", "l_orderkey", "l_suppkey",
                           "l_shipmode") if c in grouping]
    aggs = ("sum(l_extendedprice) AS s, count(*) AS n, avg(l_discount) AS d, "
            "max(l_comment) AS c, GROUPING(l_returnflag) AS gr")
    if distinct:
        aggs += ", count(DISTINCT l_partkey) AS parts"
    sql = f"SELECT {', '.join(columns)}, {aggs} FROM lineitem GROUP BY {grouping}"
    _check(tiny, duckdb_tpch, sql, "1mb", tmp_path)


def test_user_aggregates_spill_like_an_unlimited_budget(tiny: flowsql.Session,
                                                        tmp_path: Path) -> None:
    for name in ("joined", "row_count", "weighted_avg"):
        tiny.sql(f"CREATE FUNCTION {name} AS 'tests.udfs.aggregates.{name}'")
    sql = ("SELECT l_suppkey, joined(l_shipmode) AS modes, row_count(l_linenumber) AS n, "
           "weighted_avg(CAST(l_discount AS DOUBLE), CAST(l_quantity AS DOUBLE)) "
           "FILTER (WHERE l_returnflag = 'R') AS w, sum(l_quantity) AS q "
           "FROM lineitem GROUP BY l_suppkey")
    unlimited = tiny.sql(sql).to_arrow()
    tiny.sql("SET 'execution.memory-budget' = '1mb'")
    spilled = tiny.sql(sql).to_arrow()
    assert not compare_tables(spilled, unlimited, ordered=False)
    assert _files(tmp_path) == []


DISTINCT_KINDS = ["count(DISTINCT l_partkey)", "sum(DISTINCT l_partkey)",
                  "sum(DISTINCT l_extendedprice)", "avg(DISTINCT l_quantity)",
                  "avg(DISTINCT l_extendedprice)", "var_samp(DISTINCT l_discount)",
                  "var_pop(DISTINCT l_extendedprice)", "stddev_samp(DISTINCT l_tax)",
                  "stddev_pop(DISTINCT l_quantity)", "min(DISTINCT l_shipmode)",
                  "max(DISTINCT l_partkey)",
                  "count(DISTINCT l_suppkey) FILTER (WHERE l_returnflag = 'R')"]
VARIANCE_FAMILY = ("var_samp(l_extendedprice) AS vs, var_pop(l_discount) AS vp, "
                   "stddev_samp(l_quantity) AS ss, stddev_pop(l_tax) AS sp")


@pytest.mark.parametrize("budget", ["64kb", "1mb"])
@pytest.mark.parametrize("kind", DISTINCT_KINDS)
def test_each_distinct_aggregate_spills_without_keys(tiny: flowsql.Session, duckdb_tpch,
                                                     kind: str, budget: str,
                                                     tmp_path: Path) -> None:
    """A global DISTINCT aggregate is one group larger than the budget: it is computed
    over its spilled rows, partitioned by the argument's values."""
    _check(tiny, duckdb_tpch, f"SELECT {kind} AS x, count(*) AS n FROM lineitem", budget,
           tmp_path)


@pytest.mark.parametrize("budget", ["64kb", "1mb"])
@pytest.mark.parametrize("grouping", [
    "", "GROUP BY l_returnflag", "GROUP BY ROLLUP (l_returnflag, l_linestatus)",
    "GROUP BY CUBE (l_returnflag, l_shipmode)",
    "GROUP BY GROUPING SETS ((), (l_linestatus), (l_shipmode, l_returnflag))"],
    ids=["global", "keys", "rollup", "cube", "grouping-sets"])
def test_distinct_aggregates_of_large_groups_spill(tiny: flowsql.Session, duckdb_tpch,
                                                   grouping: str, budget: str,
                                                   tmp_path: Path) -> None:
    """Every DISTINCT kind at once (each split by its own argument), the variance family and
    mergeable aggregates, over groups (the grand total among them) larger than the
    budget."""
    keys = [c for c in ("l_returnflag", "l_linestatus", "l_shipmode") if c in grouping]
    aggs = ", ".join(f"{kind} AS d{i}" for i, kind in enumerate(DISTINCT_KINDS))
    sql = (f"SELECT {''.join(k + ', ' for k in keys)}{aggs}, {VARIANCE_FAMILY}, "
           f"sum(l_quantity) AS q, avg(l_discount) AS a, count(*) AS n, "
           f"max(l_comment) AS c FROM lineitem {grouping}")
    _check(tiny, duckdb_tpch, sql, budget, tmp_path)


@pytest.mark.parametrize("budget", ["64kb", "1mb"])
def test_variance_family_spills(tiny: flowsql.Session, duckdb_tpch, budget: str,
                                tmp_path: Path) -> None:
    _check(tiny, duckdb_tpch, f"SELECT l_suppkey, {VARIANCE_FAMILY} FROM lineitem "
           "GROUP BY l_suppkey", budget, tmp_path)
    _check(tiny, duckdb_tpch, f"SELECT {VARIANCE_FAMILY} FROM lineitem", budget, tmp_path)


def test_one_group_of_a_user_aggregate_without_merge_too_large_fails_naming_it(
        tiny: flowsql.Session, tmp_path: Path) -> None:
    """A user aggregate without ``merge`` needs all of its group's rows at once."""
    tiny.sql("CREATE FUNCTION joined AS 'tests.udfs.aggregates.joined'")
    tiny.sql("SET 'execution.memory-budget' = '64kb'")
    with pytest.raises(ResourceExhausted, match=r"the group \(\).*execution.memory-budget"):
        tiny.sql("SELECT joined(l_comment) AS c, count(DISTINCT l_partkey) AS p "
                 "FROM lineitem").to_arrow()
    assert _files(tmp_path) == []
