"""Computed columns (``name AS expr``) and ``PROCTIME()`` columns in CREATE TABLE.

Flink semantics: computed columns are not stored -- the source reads only the physical
columns (a CSV file's fields map to the physical columns in order), INSERT INTO writes only
the physical columns -- while queries and DESCRIBE see physical and computed columns in
declaration order. A computed column may reference physical columns only, and a WATERMARK
may be declared on a computed TIMESTAMP column. ``PROCTIME()`` is the wall-clock time when
the row is read (TIMESTAMP_LTZ(3), NOT NULL).

Expected rows below are worked out by hand from the input files.
"""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import flowsql
from flowsql.errors import FlowSQLError, SqlError
from flowsql.planner.expressions import Call, ColumnRef
from flowsql.planner.physical import ProjectExec, TableScanExec, WindowAggregateExec
from flowsql.planner.schema import Field
from flowsql.runtime.expressions import compile_expr
from flowsql.session import Session
from flowsql.session.execute.planning import plan_query
from flowsql.sql.bind_query import PROCTIME_TYPE
from flowsql.sql.statement_parser import parse_one

# id, price, qty, s (the event time as text)
ORDERS_CSV = """1,2.5,4,2024-01-01 00:00:01
2,1.25,3,2024-01-01 00:00:04
3,10.0,1,2024-01-01 00:00:06
4,0.5,10,2024-01-01 00:00:12
"""

ORDERS_DDL = """CREATE TABLE orders (
  id BIGINT,
  price DOUBLE,
  qty INT NOT NULL,
  amount AS price * qty,
  s VARCHAR,
  ts AS CAST(s AS TIMESTAMP(3)),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'csv')"""


def _t(seconds: int) -> dt.datetime:
    return dt.datetime(2024, 1, 1) + dt.timedelta(seconds=seconds)


@pytest.fixture()
def session(tmp_path: Path) -> Session:
    path = tmp_path / "orders.csv"
    path.write_text(ORDERS_CSV)
    s = flowsql.connect()
    s.sql(ORDERS_DDL.format(path=path))
    return s


def _rows(table: pa.Table) -> list[tuple[object, ...]]:
    columns = [c.to_pylist() for c in table.columns]
    return list(zip(*columns))


# -- reading ------------------------------------------------------------------------------

def test_select_star_shows_physical_and_computed_columns_in_declaration_order(
        session: Session) -> None:
    table = session.sql("SELECT * FROM orders").to_arrow()
    assert table.schema.names == ["id", "price", "qty", "amount", "s", "ts"]
    assert [f.type for f in table.schema] == [pa.int64(), pa.float64(), pa.int32(),
                                              pa.float64(), pa.string(), pa.timestamp("ms")]
    assert sorted(_rows(table)) == [
        (1, 2.5, 4, 10.0, "2024-01-01 00:00:01", _t(1)),
        (2, 1.25, 3, 3.75, "2024-01-01 00:00:04", _t(4)),
        (3, 10.0, 1, 10.0, "2024-01-01 00:00:06", _t(6)),
        (4, 0.5, 10, 5.0, "2024-01-01 00:00:12", _t(12)),
    ]


def test_computed_columns_in_where_group_by_and_expressions(session: Session) -> None:
    # amount > 4 keeps ids 1 (10.0), 3 (10.0), 4 (5.0); grouped by amount: 10.0 twice, 5.0
    table = session.sql("SELECT amount, count(*) AS n, max(ts) AS last, sum(amount * 2) AS d "
                        "FROM orders WHERE amount > 4 GROUP BY amount ORDER BY amount"
                        ).to_arrow()
    assert _rows(table) == [(5.0, 1, _t(12), 10.0), (10.0, 2, _t(6), 40.0)]


def test_parquet_table_reads_physical_columns_by_name(tmp_path: Path) -> None:
    path = tmp_path / "people.parquet"
    # the file's column order differs from the DDL's: parquet columns match by name
    pq.write_table(pa.table({"name": ["ann", "bob", None], "a": [1, 2, 3]}), path)
    s = flowsql.connect()
    s.sql(f"CREATE TABLE people (a BIGINT, doubled AS a * 2, name VARCHAR, "
          f"shout AS UPPER(name) || '!') WITH ('path' = '{path}')")
    table = s.sql("SELECT * FROM people").to_arrow()
    assert table.schema.names == ["a", "doubled", "name", "shout"]
    assert sorted(_rows(table)) == [(1, 2, "ann", "ANN!"), (2, 4, "bob", "BOB!"),
                                    (3, 6, None, None)]
    # only some columns, one computed column alone
    assert _rows(s.sql("SELECT shout, a FROM people WHERE doubled >= 4 ORDER BY a")
                 .to_arrow()) == [("BOB!", 2), (None, 3)]


def test_table_alias_and_qualified_computed_columns(session: Session) -> None:
    table = session.sql("SELECT o.id, o.amount FROM orders AS o JOIN orders AS p "
                        "ON o.amount = p.amount AND o.id < p.id").to_arrow()
    assert _rows(table) == [(1, 10.0)]


def test_batch_tumble_window_over_a_computed_rowtime(session: Session) -> None:
    # 5 s windows: [0, 5) ids 1, 2 (10 + 3.75); [5, 10) id 3 (10); [10, 15) id 4 (5)
    table = session.sql(
        "SELECT window_start, window_end, count(*) AS n, sum(amount) AS total "
        "FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND)) "
        "GROUP BY window_start, window_end").to_arrow()
    assert sorted(_rows(table)) == [(_t(0), _t(5), 2, 13.75), (_t(5), _t(10), 1, 10.0),
                                    (_t(10), _t(15), 1, 5.0)]


def test_physical_plan_is_a_project_of_the_computed_columns_over_the_scan(
        session: Session) -> None:
    """The shape the streaming pass relies on to put the watermark assigner above the
    Project that computes the rowtime: Project(computed) directly over TableScan, the scan
    reading physical columns only."""
    query = ("SELECT window_start, count(*) FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), "
             "INTERVAL '5' SECOND)) GROUP BY window_start, window_end")
    _, _, physical = plan_query(session, parse_one(query))  # type: ignore[arg-type]
    node = physical
    while not isinstance(node, WindowAggregateExec):
        node = node.inputs[0]
    project = node.input
    assert isinstance(project, ProjectExec)
    scan = project.input
    assert isinstance(scan, TableScanExec)
    assert [f.name for f in scan.fields] == ["id", "price", "qty", "s"]
    names = {f.name: e for f, e in zip(project.fields, project.exprs)}
    assert str(names["ts"]) == "CAST(s AS TIMESTAMP(3))"
    assert isinstance(node.time_column, ColumnRef)
    assert node.time_column.cid == next(f.cid for f in project.fields if f.name == "ts")


def test_streaming_select_over_computed_columns(session: Session) -> None:
    session.sql("SET 'execution.runtime-mode' = 'streaming'")
    session.sql("SET 'pipeline.auto-watermark-interval' = '0'")
    batches = list(session.sql("SELECT id, amount, ts FROM orders").stream())
    rows = [r for b in batches for r in _rows(pa.Table.from_batches([b]))]
    assert sorted(rows, key=lambda r: r[1]) == [  # type: ignore[arg-type, return-value]
        ("+I", 1, 10.0, _t(1)), ("+I", 2, 3.75, _t(4)), ("+I", 3, 10.0, _t(6)),
        ("+I", 4, 5.0, _t(12))]


# -- DESCRIBE and DDL validation ------------------------------------------------------------

def test_describe_lists_computed_columns_in_place(session: Session) -> None:
    session.sql("CREATE TABLE o2 (id BIGINT, pt AS PROCTIME(), n INT NOT NULL, "
                "label AS CAST(n AS VARCHAR) COMMENT 'n as text') "
                "WITH ('connector' = 'blackhole')")
    table = session.sql("DESCRIBE orders").to_arrow()
    assert table.to_pylist() == [
        {"name": "id", "type": "BIGINT", "null": "YES"},
        {"name": "price", "type": "DOUBLE", "null": "YES"},
        {"name": "qty", "type": "INTEGER", "null": "NO"},
        {"name": "amount", "type": "DOUBLE", "null": "YES"},
        {"name": "s", "type": "VARCHAR", "null": "YES"},
        {"name": "ts", "type": "TIMESTAMP(3)", "null": "YES"},
    ]
    assert session.sql("DESCRIBE o2").to_arrow().to_pylist() == [
        {"name": "id", "type": "BIGINT", "null": "YES"},
        {"name": "pt", "type": "TIMESTAMP_LTZ(3)", "null": "NO"},
        {"name": "n", "type": "INTEGER", "null": "NO"},
        {"name": "label", "type": "VARCHAR", "null": "YES"},
    ]


def test_create_table_records_physical_schema_and_computed_columns() -> None:
    s = parse_one("CREATE TABLE t (a INT, b AS a + 1, c VARCHAR, pt AS PROCTIME()) "
                  "WITH ('connector' = 'blackhole')")
    assert [c.name for c in s.columns or ()] == ["a", "c"]  # type: ignore[attr-defined]
    computed = s.computed  # type: ignore[attr-defined]
    assert [(c.name, c.expression, c.position, c.is_proctime) for c in computed] == [
        ("b", "a + 1", 1, False), ("pt", "PROCTIME()", 3, True)]


@pytest.mark.parametrize(("column", "message", "at"), [
    # ``at``: the column of line 2 the error points at
    ("bad AS price * quantity", "computed column 'bad': column 'quantity' not found", 18),
    # computed columns see physical columns only (as in Flink)
    ("twice AS amount * 2", "computed column 'twice': column 'amount' not found", 12),
    ("m AS MAX(price)", "computed column 'm': aggregate and window functions are not "
     "allowed", 12),
    ("p AS CAST(PROCTIME() AS TIMESTAMP(3))", "computed column 'p': PROCTIME() must be the "
     "whole expression", 13),
    ("s AS price * 'abc'", "computed column 's': cannot apply '*' to DOUBLE and VARCHAR", 8),
    ("x DOUBLE AS (price)", "computed column 'x' takes its type from its expression", 3),
    ("y AS price PERSISTED", "computed column 'y': expected y AS <expression>", 3),
    ("price AS qty + 1", "column 'price' is declared twice", 3),
])
def test_bad_computed_column_fails_at_create_table(session: Session, tmp_path: Path,
                                                   column: str, message: str,
                                                   at: int) -> None:
    ddl = (f"CREATE TABLE t (price DOUBLE, amount AS price * 2, qty INT,\n"
           f"  {column}) WITH ('path' = '{tmp_path}/x.csv', 'format' = 'csv')")
    with pytest.raises(SqlError) as info:
        session.sql(ddl)
    assert message in str(info.value)
    assert info.value.line == 2
    assert info.value.col == at
    assert session.catalog.get("t") is None


@pytest.mark.parametrize(("columns", "watermark", "message"), [
    ("a INT, w AS a * 2", "w", "the rowtime column must be a TIMESTAMP"),
    ("a INT, pt AS PROCTIME()", "pt", "a PROCTIME() column is a processing-time attribute"),
    ("a INT, w AS a * 2", "nope", "WATERMARK FOR 'nope': no such column"),
])
def test_bad_watermark_on_computed_column(session: Session, columns: str, watermark: str,
                                          message: str) -> None:
    with pytest.raises(SqlError, match=message.replace("(", r"\(").replace(")", r"\)")):
        session.sql(f"CREATE TABLE t ({columns}, WATERMARK FOR {watermark} AS {watermark}) "
                    "WITH ('connector' = 'blackhole')")


def test_watermark_on_computed_column_is_recorded(session: Session) -> None:
    entry = session.catalog.get("orders")
    assert entry is not None
    assert (entry.watermark.column, entry.watermark.delay_ms) == ("ts", 1000)  # type: ignore[union-attr]
    assert entry.schema.names == ["id", "price", "qty", "s"]  # type: ignore[union-attr]


def test_only_computed_columns_is_rejected() -> None:
    s = flowsql.connect()
    with pytest.raises(SqlError, match="must declare its physical columns"):
        s.sql("CREATE TABLE t (pt AS PROCTIME()) WITH ('connector' = 'blackhole')")


# -- INSERT INTO writes physical columns only ----------------------------------------------

def test_insert_writes_physical_columns_and_reads_back_computed(session: Session,
                                                                tmp_path: Path) -> None:
    out = tmp_path / "out"
    session.sql(f"CREATE TABLE sink (id BIGINT, twice AS id * 2, price DOUBLE) "
                f"WITH ('path' = '{out}', 'format' = 'csv')")
    result = session.sql("INSERT INTO sink SELECT id, price FROM orders WHERE id <= 2")
    assert result.job is not None
    result.job.wait(60)
    # the files hold id, price only: a CSV row with three fields would not parse back
    lines = sorted(line for f in out.iterdir() if not f.name.startswith(".")
                   for line in f.read_text().splitlines())
    assert lines == ["1,2.5", "2,1.25"]
    assert sorted(_rows(session.sql("SELECT * FROM sink").to_arrow())) == [
        (1, 2, 2.5), (2, 4, 1.25)]
    with pytest.raises(FlowSQLError, match="no column twice"):
        session.sql("INSERT INTO sink (id, twice) SELECT id, id FROM orders")


# -- PROCTIME ---------------------------------------------------------------------------------

def test_proctime_is_the_wall_clock_time_of_reading(tmp_path: Path) -> None:
    path = tmp_path / "e.csv"
    path.write_text("1\n2\n3\n")
    s = flowsql.connect()
    s.sql(f"CREATE TABLE e (id BIGINT, pt AS PROCTIME()) "
          f"WITH ('path' = '{path}', 'format' = 'csv')")
    s.sql("SET 'execution.batch-size' = '1'")
    time.sleep(0.01)  # a value taken at CREATE TABLE would lie before ``before``
    before = time.time_ns() // 1_000_000
    table = s.sql("SELECT id, pt FROM e").to_arrow()
    after = time.time_ns() // 1_000_000
    assert table.schema.field("pt").type == pa.timestamp("ms", tz="UTC")
    assert sorted(table.column("id").to_pylist()) == [1, 2, 3]
    millis = table.column("pt").cast(pa.int64()).to_pylist()
    assert len(millis) == 3
    assert all(m is not None and before <= m <= after for m in millis), (before, millis, after)


def test_proctime_is_read_per_batch_not_folded_at_compile_time() -> None:
    field = Field.fresh("x", pa.int64())
    evaluate = compile_expr(Call("proctime", (), PROCTIME_TYPE), (field,))
    batch = pa.record_batch([pa.array([1, 2])], names=["x"])
    first = evaluate(batch)
    time.sleep(0.01)
    second = evaluate(batch)
    assert first.type == PROCTIME_TYPE and len(first) == 2 and first.null_count == 0
    a, b = first.cast(pa.int64()).to_pylist(), second.cast(pa.int64()).to_pylist()
    assert a[0] == a[1] and b[0] == b[1]
    assert b[0] - a[0] >= 10


def test_streaming_tumble_over_a_computed_rowtime_drops_the_late_row(tmp_path: Path) -> None:
    """ts is computed from a string column; the WATERMARK on it is assigned above the
    computed columns. Arrival order: 1 s, 4 s, 6 s, 12 s, then 2 s (late: the watermark is
    11 s, so window [0, 5) has fired)."""
    path = tmp_path / "orders.csv"
    path.write_text("1,10.0,2024-01-01 00:00:01\n2,3.75,2024-01-01 00:00:04\n"
                    "3,10.0,2024-01-01 00:00:06\n4,5.0,2024-01-01 00:00:12\n"
                    "5,100.0,2024-01-01 00:00:02\n")
    s = flowsql.connect(**{"execution.runtime-mode": "streaming",
                           "pipeline.auto-watermark-interval": "0"})
    s.sql(f"""CREATE TABLE orders (id BIGINT, amount DOUBLE, s STRING,
                ts AS CAST(s AS TIMESTAMP(3)),
                WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
              WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'csv')""")
    result = s.sql("""SELECT window_start, COUNT(*) AS n, SUM(amount) AS total
                      FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND))
                      GROUP BY window_start, window_end""")
    at = lambda sec: dt.datetime(2024, 1, 1, 0, 0, sec)  # noqa: E731
    changes = [row for b in result.stream() for row in zip(*b.to_pydict().values())]
    assert sorted(changes) == [("+I", at(0), 2, 13.75), ("+I", at(5), 1, 10.0),
                               ("+I", at(10), 1, 5.0)]
