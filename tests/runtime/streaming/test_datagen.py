"""datagen: Flink's options, reproducible rows, exact resume after restore, throttling."""

from __future__ import annotations

import pyarrow as pa
import pytest

from flowsql.errors import CatalogError
from flowsql.runtime.connectors.datagen import DatagenSource, DatagenTable
from flowsql.runtime.operator import OperatorContext

SCHEMA = pa.schema([("id", pa.int64()), ("price", pa.int32()), ("score", pa.float64()),
                    ("name", pa.string()), ("flag", pa.bool_()),
                    ("ts", pa.timestamp("ms"))])
OPTIONS = {"number-of-rows": "25", "rows-per-second": "0", "seed": "7",
           "fields.id.kind": "sequence", "fields.id.start": "100", "fields.id.end": "1000",
           "fields.price.min": "-3", "fields.price.max": "3", "fields.score.min": "1.5",
           "fields.score.max": "2.5", "fields.name.length": "5",
           "fields.ts.kind": "sequence", "fields.ts.start": "1000", "fields.ts.end": "99999"}


def _run(options, batch_size="4", source=None) -> pa.Table:
    source = source or DatagenSource(DatagenTable(SCHEMA, options))
    source.open(OperatorContext("gen", {"execution.batch-size": batch_size}))
    return pa.Table.from_batches(list(source.produce()), schema=SCHEMA)


def test_rows_are_reproducible_and_respect_the_options():
    table = _run(OPTIONS)
    assert table.equals(_run(OPTIONS, batch_size="7"))
    assert table.num_rows == 25
    assert table.column("id").to_pylist() == list(range(100, 125))
    assert table.column("ts").cast(pa.int64()).to_pylist() == list(range(1000, 1025))
    assert set(table.column("price").to_pylist()) <= set(range(-3, 4))
    assert len(set(table.column("price").to_pylist())) > 3
    assert all(1.5 <= s < 2.5 for s in table.column("score").to_pylist())
    names = table.column("name").to_pylist()
    assert all(len(n) == 5 and set(n) <= set("0123456789abcdef") for n in names)
    assert len(set(names)) == 25
    other_seed = _run({**OPTIONS, "seed": "8"})
    assert other_seed.column("price").to_pylist() != table.column("price").to_pylist()


def test_sequence_end_bounds_the_source():
    options = {k: v for k, v in OPTIONS.items() if k != "number-of-rows"}
    options["fields.id.end"] = "109"
    assert _run(options).column("id").to_pylist() == list(range(100, 110))


def test_resume_after_restore_continues_exactly():
    whole = _run(OPTIONS)
    first = DatagenSource(DatagenTable(SCHEMA, OPTIONS))
    first.open(OperatorContext("gen", {"execution.batch-size": "4"}))
    produced = first.produce()
    head = [next(produced), next(produced), next(produced)]
    snapshot = first.snapshot_state(1)
    second = DatagenSource(DatagenTable(SCHEMA, OPTIONS))
    second.restore_state(snapshot)
    tail = _run(OPTIONS, source=second)
    assert pa.concat_tables([pa.Table.from_batches(head), tail]).equals(whole)


@pytest.mark.parametrize(("timeout", "size", "pause"), [("1000", 10, 1.0), ("100", 1, 0.1)])
def test_unbounded_source_is_throttled_to_rows_per_second(timeout: str, size: int,
                                                          pause: float) -> None:
    """Batches hold one buffer timeout's worth of rows (10 rows per second here)."""
    now = [0.0]
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        now[0] += seconds

    options = {"rows-per-second": "10", "fields.id.min": "0", "fields.id.max": "9"}
    schema = pa.schema([("id", pa.int64())])
    source = DatagenSource(DatagenTable(schema, options), clock=lambda: now[0], sleep=sleep)
    source.open(OperatorContext("gen", {"execution.batch-size": "100",
                                        "execution.buffer-timeout": timeout}))
    produced = source.produce()
    sizes = [next(produced).num_rows for _ in range(3)]
    assert sizes == [size, size, size]
    assert sleeps == pytest.approx([pause, pause, pause])
    assert source.position == 3 * size


def test_bad_options_are_reported():
    with pytest.raises(CatalogError, match="names no column"):
        DatagenTable(SCHEMA, {"fields.nope.kind": "random"})
    with pytest.raises(CatalogError, match="needs fields.id.start"):
        DatagenTable(SCHEMA, {"fields.id.kind": "sequence"})
    with pytest.raises(CatalogError, match="must be an integer"):
        DatagenTable(SCHEMA, {"number-of-rows": "many"})
