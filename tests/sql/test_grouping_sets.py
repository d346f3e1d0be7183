"""Which grouping sets ROLLUP / CUBE / GROUPING SETS mean, GROUPING's bits, and the errors
the binder reports; results are checked against DuckDB in
tests/differential/queries/grouping_sets.sql."""

from __future__ import annotations

import pyarrow as pa
import pytest

import flowsql
from flowsql.errors import BindError
from flowsql.planner.expressions import ColumnRef
from flowsql.sql.grouping_sets import GroupingCall, cross, cube, grouping_value, rollup


def test_rollup_cube_and_their_cross_product():
    assert rollup([(0,), (1,)]) == [(0, 1), (0,), ()]
    assert rollup([(0, 1), (2,)]) == [(0, 1, 2), (0, 1), ()]  # ROLLUP((a, b), c)
    assert sorted(cube([(0,), (1,)])) == [(), (0,), (0, 1), (1,)]
    # GROUP BY a, ROLLUP(b, c): a is in every set
    assert cross([[(0,)], rollup([(1,), (2,)])]) == [(0, 1, 2), (0, 1), (0,)]
    # duplicates are kept, as SQL says: GROUPING SETS ((a), (a))
    assert cross([[(0,), (0,)]]) == [(0,), (0,)]


def test_grouping_bits_first_argument_most_significant():
    a, b = ColumnRef(1, "a", pa.int64()), ColumnRef(2, "b", pa.int64())
    call = GroupingCall((a, b))
    assert [grouping_value(call, [a, b], s) for s in [(0, 1), (0,), (1,), ()]] == [0, 1, 2, 3]


@pytest.fixture
def session():
    s = flowsql.connect()
    s.sql("CREATE TEMPORARY VIEW t AS SELECT * FROM (VALUES (1, 'x', 10), (1, 'y', 20), "
          "(2, 'x', 30)) AS v(a, b, c)")
    yield s
    s.close()


def test_grouping_of_a_plain_group_by_is_zero(session):
    rows = session.sql("SELECT a, GROUPING(a) AS g, SUM(c) AS s FROM t GROUP BY a "
                       "ORDER BY a").to_arrow().to_pylist()
    assert rows == [{"a": 1, "g": 0, "s": 30}, {"a": 2, "g": 0, "s": 30}]


def test_grouping_id_and_nested_rollup_in_grouping_sets(session):
    sql = ("SELECT a, b, GROUPING_ID(a, b) AS g, SUM(c) AS s FROM t "
           "GROUP BY GROUPING SETS (ROLLUP(a), (b))")
    rows = sorted((tuple(r.values()) for r in session.sql(sql).to_arrow().to_pylist()),
                  key=repr)
    assert rows == sorted([(1, None, 1, 30), (2, None, 1, 30),     # ROLLUP(a): (a)
                           (None, None, 3, 60),                      # ROLLUP(a): ()
                           (None, "x", 2, 40), (None, "y", 2, 20)],  # (b)
                          key=repr)


@pytest.mark.parametrize(("sql", "message"), [
    ("SELECT GROUPING(a) FROM t", "GROUPING needs a GROUP BY"),
    ("SELECT GROUPING(c), SUM(c) FROM t GROUP BY ROLLUP(a)",
     "GROUPING arguments must be GROUP BY expressions"),
    ("SELECT b, SUM(c) FROM t GROUP BY ROLLUP(a)", "must appear in the GROUP BY clause"),
])
def test_errors(session, sql: str, message: str):
    with pytest.raises(BindError, match=message):
        session.sql(sql)
