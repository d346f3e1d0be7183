"""State tables as per-key-group entries and back: order, schema metadata, empty tables."""

from __future__ import annotations

import pyarrow as pa
import pytest

from flowsql.errors import ExecutionError
from flowsql.runtime.checkpoint.backends.entries import (
    part_key,
    schema_key,
    table_entries,
    tables_from_entries,
)
from flowsql.runtime.state import KEY_GROUP
from flowsql.runtime.state.metadata import with_metadata

KEYED = pa.schema([pa.field(KEY_GROUP, pa.int32(), nullable=False), ("key", pa.string()),
                   ("total", pa.int64())])


def _keyed(groups: list[int]) -> pa.Table:
    rows = pa.table({KEY_GROUP: pa.array(groups, pa.int32()),
                     "key": [f"k{i}" for i in range(len(groups))],
                     "total": list(range(len(groups)))}, schema=KEYED)
    return with_metadata(rows, "keyed_table", "totals", max_parallelism=1024)


def _stored(tables: dict[str, pa.Table]) -> list[tuple[bytes, bytes]]:
    """The entries as a key-value store holds them: bytewise key order."""
    return sorted((key, value.to_pybytes()) for name, table in tables.items()
                  for key, value in table_entries(name, table))


def test_one_entry_per_key_group_in_key_group_order():
    table = _keyed([300, 2, 300, 0, 2, 2, 1023])
    entries = _stored({"keyed/totals": table})
    assert [key for key, _ in entries] == [
        b"keyed/totals\x00", b"keyed/totals\x00\x00\x00\x00\x00",
        b"keyed/totals\x00\x00\x00\x00\x02", b"keyed/totals\x00\x00\x00\x01\x2c",
        b"keyed/totals\x00\x00\x00\x03\xff"]
    restored = tables_from_entries(entries)["keyed/totals"]
    # rows ordered by key group, stable within one: k1, k4, k5 stay in that order
    assert restored.to_pydict() == {KEY_GROUP: [0, 2, 2, 2, 300, 300, 1023],
                                    "key": ["k3", "k1", "k4", "k5", "k0", "k2", "k6"],
                                    "total": [3, 1, 4, 5, 0, 2, 6]}
    assert restored.schema.equals(table.schema, check_metadata=True)


def test_a_table_in_key_group_order_reads_back_identical():
    table = _keyed([1, 1, 5, 9, 9, 9, 700])
    restored = tables_from_entries(_stored({"keyed/totals": table}))["keyed/totals"]
    assert restored.equals(table, check_metadata=True)


def test_a_table_without_key_groups_is_one_entry_in_its_row_order():
    schema = pa.schema([("file", pa.string()), ("offset", pa.int64())])
    table = with_metadata(pa.table({"file": ["b", "a", "c"], "offset": [3, 1, 2]},
                                   schema=schema), "operator_list", "splits",
                          distribution="split")
    entries = _stored({"list/splits": table})
    assert [key for key, _ in entries] == [schema_key("list/splits"),
                                           part_key("list/splits", 0)]
    assert tables_from_entries(entries)["list/splits"].equals(table, check_metadata=True)


def test_empty_tables_keep_schema_and_metadata():
    keyed = _keyed([])
    listed = with_metadata(pa.schema([("watermark", pa.int64())]).empty_table(),
                           "operator_list", "progress", distribution="union")
    entries = _stored({"keyed/totals": keyed, "list/progress": listed})
    assert len(entries) == 2
    restored = tables_from_entries(entries)
    assert restored.keys() == {"keyed/totals", "list/progress"}
    assert restored["keyed/totals"].equals(keyed, check_metadata=True)
    assert restored["list/progress"].equals(listed, check_metadata=True)
    assert restored["keyed/totals"].num_rows == 0


def test_names_sharing_a_prefix_do_not_mix():
    first, second = _keyed([0, 3]), _keyed([1, 2, 2])
    restored = tables_from_entries(_stored({"keyed/a": first, "keyed/a/b": second}))
    assert restored["keyed/a"].equals(first, check_metadata=True)
    assert restored["keyed/a/b"].equals(second, check_metadata=True)


def test_malformed_names_and_entries_are_refused():
    with pytest.raises(ExecutionError, match="NUL"):
        list(table_entries("keyed/a\x00b", _keyed([1])))
    with pytest.raises(ExecutionError, match="negative key group"):
        list(table_entries("keyed/a", _keyed([-1, 2])))
    batch = _keyed([1]).to_batches()[0].serialize().to_pybytes()
    with pytest.raises(ExecutionError, match="no schema entry"):
        tables_from_entries([(part_key("keyed/a", 1), batch)])
    with pytest.raises(ExecutionError, match="is not"):
        tables_from_entries([(b"keyed/a\x00\x01", batch)])


NULLABLE = pa.schema([pa.field(KEY_GROUP, pa.int32(), nullable=False), ("name", pa.string()),
                      ("flag", pa.bool_()), ("amount", pa.int64()),
                      ("tags", pa.list_(pa.int64()))])


def _group(group: int, rows: int, seed: int) -> pa.Table:
    """``rows`` rows of key group ``group`` with nulls in every column but the key group."""
    values = [(seed * 31 + i * 7) % 11 for i in range(rows)]
    return pa.table({KEY_GROUP: pa.array([group] * rows, pa.int32()),
                     "name": [None if v < 3 else f"n{v}" for v in values],
                     "flag": [None if v % 4 == 0 else v % 2 == 0 for v in values],
                     "amount": [None if v == 5 else v * 100 for v in values],
                     "tags": [None if v > 8 else [v, None] for v in values]},
                    schema=NULLABLE)


def test_the_bytes_of_a_key_group_do_not_depend_on_its_neighbours():
    """Unchanged key groups must not be rewritten by an incremental snapshot when other
    groups change: the same rows give the same bytes wherever they sit in the table."""
    target = _group(5, 13, seed=1)
    contexts = [[], [_group(1, 3, 2)], [_group(0, 8, 3), _group(2, 1, 4)],
                [_group(3, 5, 5)]]
    followers = [[], [_group(9, 6, 6)], [_group(7, 2, 7), _group(8, 17, 8)]]
    seen = set()
    for before in contexts:
        for after in followers:
            table = pa.concat_tables([*before, target, *after])
            entries = dict(table_entries("keyed/t", table))
            seen.add(entries[part_key("keyed/t", 5)].to_pybytes())
            assert tables_from_entries(sorted(
                (k, v.to_pybytes()) for k, v in entries.items()))["keyed/t"].equals(table)
    assert len(seen) == 1


def test_dictionary_columns_round_trip():
    schema = pa.schema([pa.field(KEY_GROUP, pa.int32(), nullable=False),
                        ("city", pa.dictionary(pa.int32(), pa.string()))])
    table = pa.table({KEY_GROUP: pa.array([0, 0, 4, 9], pa.int32()),
                      "city": pa.array(["Oslo", "Rome", "Oslo", None]).dictionary_encode()},
                     schema=schema)
    table = with_metadata(table, "keyed_table", "cities", max_parallelism=16)
    restored = tables_from_entries(_stored({"keyed/cities": table}))["keyed/cities"]
    assert restored.schema.equals(table.schema, check_metadata=True)
    assert restored.to_pydict() == table.to_pydict()
