"""The filesystem connector on real files: Parquet (schema, statistics, pushdown and
row-group pruning), CSV (options, NULLs, errors with file and line) and JSON lines."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flowsql.errors import CatalogError, DataError, ExecutionError
from flowsql.planner import types as T
from flowsql.planner.catalog import TableEntry
from flowsql.planner.expressions import Call, ColumnRef, Expr, Literal
from flowsql.runtime.connectors.filesystem import (
    infer_schema,
    row_groups,
    scan,
    table_statistics,
)

ROWS = 1000


def _parquet(tmp_path: Path) -> TableEntry:
    data = pa.table({
        "k": pa.array(range(ROWS), pa.int64()),
        "name": pa.array([f"n{i % 7}" for i in range(ROWS)]).cast(pa.string_view()),
        "price": pa.array([Decimal(i) / 100 for i in range(ROWS)], pa.decimal128(15, 2)),
        "day": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i % 50) for i in range(ROWS)]),
    })
    path = tmp_path / "t.parquet"
    pq.write_table(data, path, row_group_size=100)
    options = {"connector": "filesystem", "path": str(path), "format": "parquet"}
    return TableEntry("t", infer_schema(options), options)


def col(name: str, dtype: pa.DataType) -> ColumnRef:
    return ColumnRef(0, name, dtype)


def cmp(op: str, left: Expr, right: Expr) -> Call:
    return Call(op, (left, right), T.BOOL)


def _read(table: TableEntry, columns: list[str], filters: list[Expr],
          batch_size: int = 10_000) -> pa.Table:
    batches = list(scan(table, columns, filters, batch_size))
    assert all(b.num_rows <= batch_size for b in batches)
    schema = pa.schema([table.schema.field(c) for c in columns])
    return pa.Table.from_batches(batches, schema=schema)


def test_parquet_schema_is_normalized_and_statistics_come_from_the_footer(tmp_path: Path) -> None:
    table = _parquet(tmp_path)
    assert table.schema.field("name").type == pa.string()
    assert table.schema.field("price").type == pa.decimal128(15, 2)
    stats = table_statistics(table.options)
    assert stats.row_count == ROWS
    assert stats.total_bytes == (tmp_path / "t.parquet").stat().st_size


def test_scan_reads_requested_columns_in_order_in_bounded_batches(tmp_path: Path) -> None:
    table = _parquet(tmp_path)
    out = _read(table, ["price", "k"], [], batch_size=64)
    assert out.column_names == ["price", "k"]
    assert out.num_rows == ROWS
    assert out.column("k").to_pylist() == list(range(ROWS))


def test_selective_filter_prunes_row_groups(tmp_path: Path) -> None:
    table = _parquet(tmp_path)
    k = col("k", T.INT64)
    assert len(row_groups(table, [])) == 10
    between = [cmp("gte", k, Literal(250, T.INT32)), cmp("lt", k, Literal(320, T.INT64))]
    assert len(row_groups(table, between)) == 2
    out = _read(table, ["k"], between)
    # Pushdown may keep extra rows; every row the predicate accepts must be there.
    assert set(range(250, 320)) <= set(out.column("k").to_pylist())
    flipped = [cmp("gt", Literal(150, T.INT64), k)]
    assert len(row_groups(table, flipped)) == 2
    in_list = [Call("in_list", (k, Literal(5, T.INT64), Literal(905, T.INT64)), T.BOOL)]
    assert len(row_groups(table, in_list)) == 2


def test_untranslatable_filters_are_not_pushed_and_never_lose_rows(tmp_path: Path) -> None:
    table = _parquet(tmp_path)
    k = col("k", T.INT64)
    name = col("name", T.STRING)
    opaque = Call("like", (name, Literal("n1%", T.STRING)), T.BOOL)
    # AND keeps the translatable part, OR with an opaque side is not pushed at all.
    conj = [Call("and", (opaque, cmp("lt", k, Literal(100, T.INT64))), T.BOOL)]
    assert len(row_groups(table, conj)) == 1
    disj = [Call("or", (opaque, cmp("lt", k, Literal(100, T.INT64))), T.BOOL)]
    assert len(row_groups(table, disj)) == 10
    # NOT of an AND must not be weakened: NOT (opaque AND k < 100) keeps everything.
    negated = [Call("not", (conj[0],), T.BOOL)]
    assert _read(table, ["k"], negated).num_rows == ROWS
    # Literals that do not fit the column exactly are not pushed.
    price = col("price", pa.decimal128(15, 2))
    fine = [cmp("gt", price, Literal(Decimal("9.995"), pa.decimal128(4, 3)))]
    assert len(row_groups(table, fine)) == 10
    coarse = [cmp("gt", price, Literal(Decimal("9.90"), pa.decimal128(3, 2)))]
    assert len(row_groups(table, coarse)) == 1


def test_string_and_date_filters_bind_against_normalized_types(tmp_path: Path) -> None:
    table = _parquet(tmp_path)
    name = col("name", T.STRING)
    day = col("day", T.DATE)
    out = _read(table, ["name", "day"], [cmp("eq", name, Literal("n3", T.STRING)),
                                         cmp("lte", day, Literal(dt.date(2024, 1, 2), T.DATE))])
    wanted = [r for r in out.to_pylist()
              if r["name"] == "n3" and r["day"] <= dt.date(2024, 1, 2)]
    assert len(wanted) == len([i for i in range(ROWS) if i % 7 == 3 and i % 50 <= 1])


def test_directory_of_files_and_missing_path(tmp_path: Path) -> None:
    folder = tmp_path / "parts"
    folder.mkdir()
    for i in range(3):
        pq.write_table(pa.table({"x": [i * 10 + j for j in range(5)]}), folder / f"p{i}.parquet")
    (folder / "_SUCCESS").write_text("")
    options = {"path": str(folder), "format": "parquet"}
    table = TableEntry("d", infer_schema(options), options)
    assert table_statistics(options).row_count == 15
    assert sorted(_read(table, ["x"], []).column("x").to_pylist()) == \
        [i * 10 + j for i in range(3) for j in range(5)]
    gone = TableEntry("g", table.schema, {"path": str(tmp_path / "nope"), "format": "parquet"})
    with pytest.raises(DataError, match="nope"):
        list(scan(gone, ["x"], [], 10))


CSV_SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("amount", pa.decimal128(10, 2)),
                        ("day", pa.date32()), ("flag", pa.bool_())])


def _csv(tmp_path: Path, text: str, **options: str) -> TableEntry:
    path = tmp_path / "t.csv"
    path.write_text(text)
    return TableEntry("c", CSV_SCHEMA, {"path": str(path), "format": "csv", **options})


def test_csv_with_header_delimiter_and_nulls(tmp_path: Path) -> None:
    table = _csv(tmp_path, "id|name|amount|day|flag\n1|ann|1.50|2024-01-31|true\n"
                           "2||||false\n3|\"b|c\"|-2.25|1995-03-15|\n",
                 **{"csv.field-delimiter": "|", "csv.ignore-first-line": "true"})
    out = _read(table, ["id", "name", "amount", "day", "flag"], [])
    assert out.to_pylist() == [
        {"id": 1, "name": "ann", "amount": Decimal("1.50"), "day": dt.date(2024, 1, 31),
         "flag": True},
        {"id": 2, "name": "", "amount": None, "day": None, "flag": False},
        {"id": 3, "name": "b|c", "amount": Decimal("-2.25"), "day": dt.date(1995, 3, 15),
         "flag": None},
    ]


def test_csv_null_literal(tmp_path: Path) -> None:
    table = _csv(tmp_path, "1,NULL,NULL,NULL,NULL\n2,,3,2024-01-01,true\n",
                 **{"csv.null-literal": "NULL"})
    out = _read(table, ["name", "id", "amount"], [])
    assert out.to_pylist() == [{"name": None, "id": 1, "amount": None},
                               {"name": "", "id": 2, "amount": Decimal("3.00")}]


def test_csv_first_line_is_data_by_default(tmp_path: Path) -> None:
    table = _csv(tmp_path, "1,a,1,2024-01-01,true\n2,b,2,2024-01-02,false\n")
    assert _read(table, ["id"], []).column("id").to_pylist() == [1, 2]


def test_bad_csv_value_names_file_line_and_column(tmp_path: Path) -> None:
    table = _csv(tmp_path, "id,name,amount,day,flag\n1,a,1,2024-01-01,true\n"
                           "2,b,x1,2024-01-02,false\n",
                 **{"csv.ignore-first-line": "true"})
    with pytest.raises(DataError, match=r"t\.csv, line 3, column 'amount'.*'x1'"):
        list(scan(table, ["id", "amount"], [], 100))


def test_bad_csv_date_and_field_count(tmp_path: Path) -> None:
    table = _csv(tmp_path, "1,a,1,2024-01-01,true\n2,b,2,2024-13-45,false\n")
    with pytest.raises(DataError, match=r"line 2, column 'day'"):
        list(scan(table, ["day"], [], 100))
    table = _csv(tmp_path, "1,a,1,2024-01-01,true\n2,b\n")
    with pytest.raises(DataError, match=r"t\.csv, line 2: expected 5 fields, found 2"):
        list(scan(table, ["id"], [], 100))


def test_json_lines(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text('{"id": 1, "name": "a", "amount": 1.5, "day": "2024-01-31", "flag": true}\n'
                    '{"id": 2, "extra": 5}\n')
    table = TableEntry("j", CSV_SCHEMA, {"path": str(path), "format": "json"})
    out = _read(table, ["day", "id", "amount"], [])
    assert out.to_pylist() == [{"day": dt.date(2024, 1, 31), "id": 1, "amount": Decimal("1.50")},
                               {"day": None, "id": 2, "amount": None}]
    path.write_text('{"id": 1}\n{"id": "two"}\n')
    with pytest.raises(DataError, match=r"t\.json, line 2, column 'id'"):
        list(scan(table, ["id"], [], 100))


def test_csv_and_json_need_declared_columns(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="declare"):
        infer_schema({"path": str(tmp_path), "format": "csv"})
    with pytest.raises(CatalogError, match="declare"):
        infer_schema({"path": str(tmp_path), "format": "json"})


def _two_files(tmp_path: Path, second: pa.Table) -> Path:
    folder = tmp_path / "parts"
    folder.mkdir()
    pq.write_table(pa.table({"a": [1, 2], "b": ["x", "y"]}), folder / "p0.parquet")
    pq.write_table(second, folder / "p1.parquet")
    return folder


@pytest.mark.parametrize(("second", "difference"), [
    (pa.table({"a": [3], "c": ["z"]}), "it has no column 'b'"),
    (pa.table({"a": [3], "b": [4]}), "column 'b' is int64 there, string here"),
    (pa.table({"a": [3], "b": ["z"], "c": [1]}), "it has an extra column 'c'"),
])
def test_directory_of_parquet_files_with_different_schemas_is_an_error(
        tmp_path: Path, second: pa.Table, difference: str) -> None:
    folder = _two_files(tmp_path, second)
    message = (f"Parquet file '{folder / 'p1.parquet'}' does not match "
               f"'{folder / 'p0.parquet'}': {difference}; the files of one table must have "
               "the same columns")
    with pytest.raises(DataError) as error:
        infer_schema({"path": str(folder), "format": "parquet"})
    assert str(error.value) == message


def test_declared_column_missing_from_a_parquet_file_is_an_error(tmp_path: Path) -> None:
    folder = _two_files(tmp_path, pa.table({"a": [3], "c": ["z"]}))
    declared = pa.schema([("a", pa.int64()), ("b", pa.string())])
    table = TableEntry("t", declared, {"path": str(folder), "format": "parquet"})
    message = f"Parquet file '{folder / 'p1.parquet'}' has no column 'b' (declared by the table)"
    for columns in (["a", "b"], ["a"]):
        with pytest.raises(DataError) as error:
            list(scan(table, columns, [], 10))
        assert str(error.value) == message
    with pytest.raises(DataError) as error:
        row_groups(table, [])
    assert str(error.value) == message
    # The files that have the columns read as before.
    (folder / "p1.parquet").unlink()
    assert _read(table, ["b", "a"], []).to_pylist() == [{"b": "x", "a": 1}, {"b": "y", "a": 2}]


@pytest.mark.parametrize("parallelism", [1, 2])
def test_queries_on_a_parquet_file_missing_a_declared_column_fail_naming_it(
        tmp_path: Path, parallelism: int) -> None:
    import flowsql

    folder = _two_files(tmp_path, pa.table({"a": [3], "c": ["z"]}))
    session = flowsql.connect(parallelism=parallelism)
    # a query this small is otherwise costed onto one subtask in the session
    session.sql("SET 'optimizer.small-query-on-one-subtask' = 'false'")
    session.sql(f"CREATE TABLE t (a BIGINT, b STRING) WITH ('path'='{folder}', "
                "'format'='parquet')")
    # On worker processes the error arrives wrapped, naming the task that failed.
    with pytest.raises(DataError if parallelism == 1 else ExecutionError) as error:
        session.sql("SELECT a, b FROM t").to_arrow()
    assert str(error.value).endswith(
        f"Parquet file '{folder / 'p1.parquet'}' has no column 'b' (declared by the table)")
    with pytest.raises(DataError, match="does not match"):
        session.sql(f"CREATE TABLE inferred WITH ('path'='{folder}')")
