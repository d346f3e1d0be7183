"""Named windows (``OVER w .. WINDOW w AS (..)``) mean the inline specification they
name: hand-checked rows in batch mode, the inline spelling's rows in streaming mode (where
the ORDER BY must stay the rowtime attribute), and located errors."""

from __future__ import annotations

import pytest

import flowsql
from flowsql.errors import BindError

VALUES = "(VALUES (1, 1, 10), (1, 2, 20), (1, 3, 30), (2, 4, 40)) AS t(k, x, y)"


def _rows(session: flowsql.Session, sql: str) -> list[tuple]:
    return sorted(tuple(r.values()) for r in session.sql(sql).to_arrow().to_pylist())


@pytest.fixture
def batch() -> flowsql.Session:
    return flowsql.connect()


def test_named_window_supplies_partition_order_and_frame(batch) -> None:
    # per k, ordered by x, the current and one preceding row: k=1: 1, 1+2, 2+3; k=2: 4
    assert _rows(batch, f"SELECT x, SUM(x) OVER w AS s, COUNT(*) OVER w AS c FROM {VALUES} "
                 "WINDOW w AS (PARTITION BY k ORDER BY x ROWS BETWEEN 1 PRECEDING AND "
                 "CURRENT ROW)") == [(1, 1, 1), (2, 3, 2), (3, 5, 2), (4, 4, 1)]


def test_reference_and_definition_may_add_to_a_named_window(batch) -> None:
    # w: PARTITION BY k; the reference adds ORDER BY x (running sum); v builds on w
    running = [(1, 1), (2, 3), (3, 6), (4, 4)]
    assert _rows(batch, f"SELECT x, SUM(x) OVER (w ORDER BY x) AS s FROM {VALUES} "
                 "WINDOW w AS (PARTITION BY k)") == running
    assert _rows(batch, f"SELECT x, SUM(x) OVER v AS s FROM {VALUES} "
                 "WINDOW w AS (PARTITION BY k), v AS (w ORDER BY x)") == running


def test_nested_query_keeps_its_own_window_clause(batch) -> None:
    # the outer w (whole table, 100) must not leak into the inner query's w (per k)
    assert _rows(batch, f"SELECT s, SUM(y) OVER w AS total FROM (SELECT y, SUM(y) OVER w AS s "
                 f"FROM {VALUES} WINDOW w AS (PARTITION BY k)) WINDOW w AS ()") == [
        (40, 100), (60, 100), (60, 100), (60, 100)]


@pytest.mark.parametrize("sql, message", [
    (f"SELECT SUM(x) OVER v FROM {VALUES}", "unknown window 'v'"),
    (f"SELECT SUM(x) OVER v FROM {VALUES} WINDOW w AS (PARTITION BY k)", "unknown window 'v'"),
    (f"SELECT SUM(x) OVER w FROM {VALUES} WINDOW w AS (PARTITION BY k), w AS ()",
     "window 'w' is defined twice"),
    (f"SELECT SUM(x) OVER (w PARTITION BY k) FROM {VALUES} WINDOW w AS (PARTITION BY k)",
     "window 'w' already has a PARTITION BY"),
])
def test_window_reference_errors(batch, sql: str, message: str) -> None:
    with pytest.raises(BindError, match=message):
        batch.sql(sql).to_arrow()


def test_streaming_named_window_equals_the_inline_one(tmp_path) -> None:
    path = tmp_path / "orders.csv"
    path.write_text("u1,1.5,2024-01-01 00:00:01\nu2,2.5,2024-01-01 00:00:02\n"
                    "u1,3.0,2024-01-01 00:00:03\nu1,4.0,2024-01-01 00:00:04\n")
    session = flowsql.connect(**{"execution.runtime-mode": "streaming"})
    session.sql(f"CREATE TABLE orders (user_id STRING, amount DOUBLE, ts TIMESTAMP(3), "
                f"WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH ('connector' = "
                f"'filesystem', 'path' = '{path}', 'format' = 'csv')")
    spec = "PARTITION BY user_id ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW"
    named = _rows(session, f"SELECT user_id, amount, SUM(amount) OVER w AS s FROM orders "
                  f"WINDOW w AS ({spec})")
    assert named == _rows(session, f"SELECT user_id, amount, SUM(amount) OVER ({spec}) AS s "
                          "FROM orders")
    assert named == [("u1", 1.5, 1.5), ("u1", 3.0, 4.5), ("u1", 4.0, 7.0), ("u2", 2.5, 2.5)]
