"""Filters on one dictionary-encoded string column are checked per distinct value before
the strings are decoded: the rows a scan returns are exactly those of the plain read (NULLs,
IS NULL, LIKE, IN and a filter over two columns included), and a prefiltered batch keeps
only rows that pass."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import flowsql
from flowsql.planner.expressions import Call, Literal
from flowsql.planner.schema import Field
from flowsql.runtime.connectors.filesystem import read_unit, scan_units
from flowsql.runtime.operators.source.dictionary_prefilter import DictionaryPrefilter
from flowsql.tpch.verify import compare_tables

QUERIES = [
    "SELECT k, mode FROM t WHERE mode IN ('AIR', 'MAIL')",
    "SELECT k, mode FROM t WHERE mode IS NULL",
    "SELECT k, mode, note FROM t WHERE mode LIKE 'A%' AND note <> 'x'",
    "SELECT k FROM t WHERE mode = note",
    "SELECT k, mode FROM t WHERE NOT (mode = 'AIR') AND k < 900",
    "SELECT count(*) FROM t WHERE coalesce(mode, 'none') = 'none'",
]


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    modes = ["AIR", "MAIL", None, "SHIP", "AIR REG", "RAIL", "MAIL"]
    notes = ["x", "AIR", "y", "MAIL", None]
    n = 3000
    data = pa.table({
        "k": pa.array(range(n), pa.int64()),
        "mode": pa.array([modes[i % len(modes)] for i in range(n)], pa.string()),
        "note": pa.array([notes[i % len(notes)] for i in range(n)], pa.string()),
    })
    path = tmp_path_factory.mktemp("prefilter") / "t.parquet"
    pq.write_table(data, path, row_group_size=1000, use_dictionary=True)
    return path


@pytest.mark.parametrize("sql", QUERIES)
def test_scan_with_prefilter_matches_duckdb(table: Path, sql: str) -> None:
    session = flowsql.connect(**{"execution.batch-size": "512"})
    session.sql(f"CREATE TABLE t WITH ('path' = '{table}')")
    duck = duckdb.connect()
    duck.sql(f"CREATE VIEW t AS SELECT * FROM read_parquet('{table}')")
    expected = duck.sql(sql).to_arrow_table()
    assert compare_tables(session.sql(sql).to_arrow(), expected, ordered=False) == []


def test_prefilter_keeps_exactly_the_passing_rows() -> None:
    mode = Field.fresh("mode", pa.string())
    other = Field.fresh("other", pa.string())
    equals_air = Call("eq", (mode.ref(), Literal("AIR", pa.string())), pa.bool_())
    two_columns = Call("eq", (mode.ref(), other.ref()), pa.bool_())
    prefilter = DictionaryPrefilter((mode, other), (equals_air, two_columns))
    assert prefilter.columns == {"mode"}  # the two-column filter is left to the scan
    column = pa.array(["AIR", None, "MAIL", "AIR", None], pa.string()).dictionary_encode()
    batch = pa.record_batch([column, pa.array(list("abcde"))], names=["mode", "other"])
    kept = prefilter.apply(batch)
    assert kept.column(1).to_pylist() == ["a", "d"]


def test_dictionary_encoded_row_groups_are_read_as_dictionaries(table: Path) -> None:
    session = flowsql.connect()
    session.sql(f"CREATE TABLE t WITH ('path' = '{table}')")
    entry = session.catalog.get("t")
    units = scan_units(entry, [])
    assert len(units) == 3
    batch = next(read_unit(entry, units[1], ["k", "mode"], 4096,
                           dictionary_columns=frozenset({"mode"})))
    assert pa.types.is_dictionary(batch.schema.field("mode").type)
    plain = next(read_unit(entry, units[1], ["k", "mode"], 4096))
    assert plain.schema.field("mode").type == pa.string()
    assert batch.column(1).cast(pa.string()).to_pylist() == plain.column(1).to_pylist()
    assert plain.column(1).to_pylist()[:3] == ["MAIL", "AIR", "MAIL"]  # rows 1000-1002


def test_columns_of_mostly_distinct_values_are_read_as_plain_strings(tmp_path: Path) -> None:
    """A dictionary page holding nearly every value (free text) is not worth decoding into
    an Arrow dictionary: the column is read as plain strings, and a LIKE over it still
    returns exactly DuckDB's rows."""
    n = 2000
    data = pa.table({
        "k": pa.array(range(n), pa.int64()),
        "mode": pa.array([["AIR", "MAIL"][i % 2] for i in range(n)], pa.string()),
        "note": pa.array([f"note {i} about special {i * 7919 % 1000} requests" for i in range(n)],
                         pa.string()),
    })
    path = tmp_path / "t.parquet"
    pq.write_table(data, path, row_group_size=1000, use_dictionary=True, compression="none")
    session = flowsql.connect()
    session.sql(f"CREATE TABLE t WITH ('path' = '{path}')")
    entry = session.catalog.get("t")
    unit = scan_units(entry, [])[0]
    batch = next(read_unit(entry, unit, ["mode", "note"], 4096,
                           dictionary_columns=frozenset({"mode", "note"})))
    assert pa.types.is_dictionary(batch.schema.field("mode").type)
    assert batch.schema.field("note").type == pa.string()
    sql = "SELECT k, note FROM t WHERE note NOT LIKE '%special%9%requests%' AND mode = 'AIR'"
    duck = duckdb.connect()
    duck.sql(f"CREATE VIEW t AS SELECT * FROM read_parquet('{path}')")
    expected = duck.sql(sql).to_arrow_table()
    assert 0 < expected.num_rows < n // 2
    assert compare_tables(session.sql(sql).to_arrow(), expected, ordered=False) == []
