"""State time-to-live in the state layer, on a fixed clock: a row is live while
``last write + ttl > now`` (Flink's expiry test), writes stamp rows with the time of the
access, rows put back keep their stamps, snapshots carry the stamps and a restore drops
what expired by restore time."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from flowsql.errors import ExecutionError
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.state import KEY_GROUP
from flowsql.runtime.state.store import StateStore
from flowsql.runtime.state.ttl import UPDATED_AT, StateTtl
from tests.harness.processing_clock import ManualClock as Clock

SCHEMA = pa.schema([("key", pa.string()), ("value", pa.int64())])


def _rows(keys: list[str], values: list[int]) -> pa.Table:
    return pa.table({KEY_GROUP: pa.array([0] * len(keys), pa.int32()),
                     "key": pa.array(keys, pa.string()), "value": pa.array(values, pa.int64())})


def _store(clock: Clock, ttl_ms: int) -> StateStore:
    return StateStore(ttl=StateTtl(ttl_ms, clock))


def _content(table: pa.Table) -> list[tuple[str, int]]:
    return sorted((r["key"], r["value"]) for r in table.to_pylist())


def test_rows_expire_ttl_after_their_last_write():
    clock = Clock(1_000)
    store = _store(clock, 100)
    state = store.keyed_table("s", SCHEMA, expires=True)
    store.expire()
    state.append(_rows(["a", "b"], [1, 2]))           # written at 1000
    clock.now = 1_050
    store.expire()
    state.append(_rows(["c"], [3]))                    # written at 1050
    assert state.updated_at.tolist() == [1_000, 1_000, 1_050]
    clock.now = 1_099                                  # 1000 + 100 > 1099: still live
    assert store.expire() == 0
    assert _content(state.rows) == [("a", 1), ("b", 2), ("c", 3)]
    clock.now = 1_100                                  # 1000 + 100 <= 1100: expired
    assert store.expire() == 2
    assert _content(state.rows) == [("c", 3)]
    assert state.updated_at.tolist() == [1_050]
    clock.now = 1_150
    assert store.expire() == 1
    assert state.rows.num_rows == 0 and len(state.updated_at) == 0


def test_put_back_rows_keep_their_stamps_and_rewritten_rows_are_refreshed():
    clock = Clock(0)
    store = _store(clock, 10)
    state = store.keyed_table("s", SCHEMA, expires=True)
    store.expire()
    state.append(_rows(["a", "b", "c"], [1, 2, 3]))
    clock.now = 6
    store.expire()
    taken, stamps = state.take_stamped(np.array([True, False, True]))
    assert _content(taken) == [("a", 1), ("c", 3)] and stamps.tolist() == [0, 0]
    state.append(taken.slice(0, 1), stamps[:1])        # "a" unchanged: keeps time 0
    state.append(taken.slice(1, 1))                    # "c" rewritten: time 6
    clock.now = 10
    store.expire()
    assert _content(state.rows) == [("c", 3)]
    # replace with explicit stamps (a column update that wrote only some rows)
    state.replace(_rows(["c", "d"], [30, 4]), np.array([6, 10]))
    clock.now = 16
    store.expire()
    assert _content(state.rows) == [("d", 4)]


def test_clock_never_goes_back_and_zero_ttl_keeps_everything_but_tracks_ages():
    clock = Clock(500)
    store = _store(clock, 0)
    state = store.keyed_table("s", SCHEMA, expires=True)
    store.expire()
    state.append(_rows(["a"], [1]))
    clock.now = 10**12
    assert store.expire() == 0 and state.rows.num_rows == 1
    clock.now = 400                                    # a clock stepping back
    store.expire()
    state.append(_rows(["b"], [2]))
    assert state.updated_at.tolist() == [500, 10**12]


def test_tables_without_expiry_are_untouched():
    clock = Clock(0)
    store = _store(clock, 10)
    kept = store.keyed_table("kept", SCHEMA)
    kept.append(_rows(["a"], [1]))
    clock.now = 1_000
    store.expire()
    assert kept.rows.num_rows == 1 and len(kept.updated_at) == 0
    assert UPDATED_AT not in store.snapshot()["keyed/kept"].schema.names


def test_snapshot_carries_stamps_and_restore_drops_what_expired_by_then():
    clock = Clock(1_000)
    store = _store(clock, 100)
    state = store.keyed_table("s", SCHEMA, expires=True)
    store.expire()
    state.append(_rows(["old"], [1]))
    clock.now = 1_080
    store.expire()
    state.append(_rows(["young"], [2]))
    snapshot = store.snapshot()
    table = snapshot["keyed/s"]
    assert table.schema.names == [KEY_GROUP, "key", "value", UPDATED_AT]
    assert table.column(UPDATED_AT).to_pylist() == [1_000, 1_080]

    later = Clock(1_120)                               # "old" expired at 1100
    restored_store = _store(later, 100)
    restored = restored_store.keyed_table("s", SCHEMA, expires=True)
    restored_store.restore(snapshot)
    assert _content(restored.rows) == [("young", 2)]
    assert restored.updated_at.tolist() == [1_080]     # ages survive the restore
    later.now = 1_180
    restored_store.expire()
    assert restored.rows.num_rows == 0


def test_snapshot_without_stamps_restores_as_written_at_restore_time():
    plain = StateStore()
    state = plain.keyed_table("s", SCHEMA)
    state.append(_rows(["a", "b"], [1, 2]))
    snapshot = plain.snapshot()
    assert UPDATED_AT not in snapshot["keyed/s"].schema.names

    clock = Clock(5_000)
    store = _store(clock, 100)
    restored = store.keyed_table("s", SCHEMA, expires=True)
    store.restore(snapshot)
    assert _content(restored.rows) == [("a", 1), ("b", 2)]
    assert restored.updated_at.tolist() == [5_000, 5_000]
    clock.now = 5_100
    store.expire()
    assert restored.rows.num_rows == 0


def test_snapshot_with_stamps_restores_into_a_table_without_expiry():
    clock = Clock(0)
    store = _store(clock, 10)
    store.keyed_table("s", SCHEMA, expires=True).append(_rows(["a"], [1]))
    plain = StateStore()
    restored = plain.keyed_table("s", SCHEMA)
    plain.restore(store.snapshot())
    assert restored.rows.schema.names == [KEY_GROUP, "key", "value"]
    assert _content(restored.rows) == [("a", 1)]


def test_snapshot_sweeps_expired_rows():
    clock = Clock(0)
    store = _store(clock, 10)
    state = store.keyed_table("s", SCHEMA, expires=True)
    state.append(_rows(["a"], [1]))
    clock.now = 10
    assert store.snapshot()["keyed/s"].num_rows == 0
    assert state.rows.num_rows == 0


def test_reserved_column_name_and_negative_ttl_are_rejected():
    with pytest.raises(Exception, match="reserved"):
        StateStore().keyed_table("s", pa.schema([(UPDATED_AT, pa.int64())]))
    with pytest.raises(ValueError):
        StateTtl(-1)


def test_store_for_context_reads_the_setting_and_reports_size():
    clock = Clock(0)
    context = OperatorContext("op", {"table.exec.state.ttl": "1 s"}, processing_clock=clock)
    store = StateStore.for_context(context)
    assert store.ttl.interval_ms == 1_000
    assert context.gauges == {}                        # no keyed state yet
    first = store.keyed_table("first", SCHEMA, expires=True)
    second = store.keyed_table("second", SCHEMA)
    first.append(_rows(["a", "b"], [1, 2]))
    second.append(_rows(["c"], [3]))
    assert context.gauges["state_rows"]() == 3
    expected = (first.rows.nbytes + first.updated_at.nbytes + second.rows.nbytes)
    assert context.gauges["state_bytes"]() == expected
    # a second store of the same operator adds to the same gauges
    other = StateStore.for_context(context)
    other.keyed_table("third", SCHEMA).append(_rows(["d"], [4]))
    assert context.gauges["state_rows"]() == 4
    assert StateStore.for_context(OperatorContext("op")).ttl.enabled is False


def test_update_rewrites_values_in_place_and_stamps_only_those_rows():
    clock = Clock(0)
    store = _store(clock, 10)
    state = store.keyed_table("s", SCHEMA, expires=True)
    store.expire()
    state.append(_rows(["a", "b"], [1, 2]))
    state.append(_rows(["c"], [3]))                    # a second chunk
    before = state.snapshot()
    clock.now = 6
    store.expire()
    state.update(np.array([2, 0]), {"value": pa.array([30, 10])})
    assert state.rows.column("key").to_pylist() == ["a", "b", "c"]
    assert state.rows.column("value").to_pylist() == [10, 2, 30]
    assert state.updated_at.tolist() == [6, 0, 6]
    assert before.column("value").to_pylist() == [1, 2, 3]   # a snapshot never changes
    assert before.column(UPDATED_AT).to_pylist() == [0, 0, 0]
    clock.now = 10
    store.expire()                                     # b, last written at 0, expires
    assert _content(state.rows) == [("a", 10), ("c", 30)]
    with pytest.raises(ExecutionError, match="no column"):
        state.update(np.array([0]), {"missing": pa.array([1])})
