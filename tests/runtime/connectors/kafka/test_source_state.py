"""The kafka source's own logic: per-partition watermarks, the upsert changelog, partition
ownership and discovery, and its checkpointed positions (restored at the same and at
another parallelism, on the real broker)."""

from __future__ import annotations

from itertools import count
from types import SimpleNamespace
from typing import Any

import numpy as np
import pyarrow as pa

import flowsql
from flowsql.planner.physical import TableScanExec
from flowsql.planner.schema import Field
from flowsql.runtime.changelog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE
from flowsql.runtime.connectors.kafka.offsets import owner, parse_specific_offsets
from flowsql.runtime.connectors.kafka.split_watermarks import SplitWatermarks
from flowsql.runtime.connectors.kafka.upsert_changelog import UpsertChangelog
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.source.kafka_scan import KafkaScanOperator
from tests.harness.kafka_broker import DevBroker

_names = count()


# -- watermarks ------------------------------------------------------------------------------

class _Clock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


def test_the_watermark_is_the_minimum_over_partitions() -> None:
    marks = SplitWatermarks(delay_ms=100, interval_ms=0, idle_timeout_ms=None, clock=_Clock())
    a, b = marks.add_split(), marks.add_split()
    marks.on_records(np.array([a, a]), np.array([5_000, 9_000]))
    assert marks.emit() is None  # b has produced nothing: it holds the watermark back
    marks.on_records(np.array([b]), np.array([2_000]))
    assert marks.emit() == 1_900
    marks.on_records(np.array([b, a]), np.array([12_000, 1_000]))  # a goes back: no effect
    assert marks.emit() == 8_900
    assert marks.emit() is None  # only advances are emitted


def test_an_idle_partition_stops_holding_back_time() -> None:
    clock = _Clock()
    marks = SplitWatermarks(delay_ms=0, interval_ms=0, idle_timeout_ms=1_000, clock=clock)
    a, _ = marks.add_split(), marks.add_split()
    clock.now = 500
    marks.on_records(np.array([a]), np.array([7_000]))
    assert marks.emit() is None
    clock.now = 1_200  # b silent for 1.2 s, a for 0.7 s
    assert marks.emit() == 7_000
    clock.now = 5_000  # both idle: the split with records decides, nothing new to emit
    assert marks.current() == 7_000 and marks.emit() is None


def test_when_every_partition_goes_idle_the_ones_with_records_decide() -> None:
    """A burst into partition a while b stays empty, both going idle in the same instant:
    the watermark still reaches a's time (else a's windows would never fire)."""
    clock = _Clock()
    marks = SplitWatermarks(delay_ms=0, interval_ms=0, idle_timeout_ms=300, clock=clock)
    a, _ = marks.add_split(), marks.add_split()
    marks.on_records(np.array([a, a]), np.array([1_000, 24_000]))
    assert marks.emit() is None  # b holds it back while active
    clock.now = 300  # a and b idle together
    assert marks.emit() == 24_000


def test_periodic_emission() -> None:
    clock = _Clock()
    marks = SplitWatermarks(delay_ms=0, interval_ms=200, idle_timeout_ms=None, clock=clock)
    a = marks.add_split()
    marks.on_records(np.array([a]), np.array([1_000]))
    assert marks.emit() == 1_000
    marks.on_records(np.array([a]), np.array([2_000]))
    clock.now = 100
    assert marks.emit() is None
    clock.now = 200
    assert marks.emit() == 2_000


# -- upsert changelog ------------------------------------------------------------------------

def test_upserts_become_changes() -> None:
    changelog = UpsertChangelog()
    changelog.add_split()
    changelog.add_split()
    changes = changelog.apply([0, 0, 1, 0, 0, 0, 0, 1],
                              [b"a", b"a", b"a", b"b", b"a", b"z", b"b", None],
                              [b"1", b"2", b"9", None, None, None, b"5", b"7"])
    # a=1 (+I), a=2 (-U 1, +U 2), a=9 in another partition (+I), b tombstone (unknown:
    # nothing), a tombstone (-D 2), z tombstone (nothing), b=5 (+I), keyless (dropped)
    assert changes.keys == [b"a", b"a", b"a", b"a", b"a", b"b"]
    assert changes.values == [b"1", b"1", b"2", b"9", b"2", b"5"]
    assert changes.kinds.tolist() == [INSERT, UPDATE_BEFORE, UPDATE_AFTER, INSERT, DELETE,
                                      INSERT]
    assert changes.records.tolist() == [0, 1, 1, 2, 4, 6]
    assert changelog.apply([1], [b"a"], [b"9"]).keys == []  # the same value: no change
    state = changelog.snapshot([("t", 0), ("t", 1)])
    assert state.to_pylist() == [{"topic": "t", "partition": 0, "key": b"b", "value": b"5"},
                                 {"topic": "t", "partition": 1, "key": b"a", "value": b"9"}]


# -- ownership and discovery -----------------------------------------------------------------

def test_every_partition_has_one_owner_spread_over_subtasks() -> None:
    for parallelism in (1, 2, 3):
        owners = [owner("orders", p, parallelism) for p in range(6)]
        assert sorted(set(owners)) == list(range(parallelism))
        assert all(owners.count(s) == 6 // parallelism for s in range(parallelism))
    assert owner("orders", 4, 3) == owner("orders", 4, 3)  # stable


def test_specific_offsets_syntax() -> None:
    assert parse_specific_offsets("partition:0,offset:42;partition:1,offset:300", "k") == {
        0: 42, 1: 300}


class _FakeConsumer:
    """Stands in for the client in the discovery unit test only: the test broker cannot
    add partitions to an existing topic, so a topic that grows is simulated here."""

    def __init__(self) -> None:
        self.partitions = 2
        self.assigned: list[tuple[str, int, int]] = []

    def list_topics(self, timeout: float) -> Any:
        topic = SimpleNamespace(error=None, partitions={p: None for p in range(self.partitions)})
        return SimpleNamespace(topics={"grow": topic})

    def incremental_assign(self, partitions: list[Any]) -> None:
        self.assigned += [(tp.topic, tp.partition, tp.offset) for tp in partitions]

    def committed(self, partitions: list[Any], timeout: float) -> list[Any]:
        raise AssertionError("a discovered partition starts at its earliest offset")


def _scan(session: Any, table: str) -> KafkaScanOperator:
    """The scan operator of all columns of ``table``, as the planner would make it."""
    entry = session.catalog.get(table)
    fields = tuple(Field.fresh(f.name, f.type) for f in entry.schema)
    return KafkaScanOperator(TableScanExec(entry, fields, (), 1.0))


def test_partitions_added_to_a_topic_are_discovered_from_the_earliest_offset() -> None:
    session = flowsql.connect()
    session.sql("CREATE TABLE t (id BIGINT) WITH ('connector' = 'kafka', 'topic' = 'grow', "
                "'format' = 'json', 'properties.bootstrap.servers' = 'localhost:1', "
                "'scan.startup.mode' = 'earliest-offset')")
    scan = _scan(session, "t")
    scan.open(OperatorContext("scan", {"execution.runtime-mode": "streaming"}))
    fake = _FakeConsumer()
    real, scan._consumer = scan._consumer, fake
    real.close()
    scan._discover()
    assert fake.assigned == [("grow", 0, -2), ("grow", 1, -2)]
    fake.partitions = 4
    scan._discover()
    assert fake.assigned[2:] == [("grow", 2, -2), ("grow", 3, -2)]
    scan._discover()
    assert len(fake.assigned) == 4  # nothing new
    scan._consumer = None


# -- checkpointed positions on the real broker -------------------------------------------------

def _context(subtask: int, parallelism: int) -> OperatorContext:
    return OperatorContext("scan", {"execution.runtime-mode": "streaming",
                                    "execution.batch-size": "3"},
                           subtask_index=subtask, parallelism=parallelism)


def _read(scan: KafkaScanOperator, polls: int) -> list[int]:
    ids: list[int] = []
    for _ in range(polls):
        for element in scan.poll(1.0) or []:
            if isinstance(element, pa.RecordBatch):
                ids += element.column(0).to_pylist()
    return ids


def test_positions_survive_a_restore_at_another_parallelism(kafka_broker: DevBroker) -> None:
    name = f"pos{next(_names)}"
    kafka_broker.create_topic(name, 4)
    kafka_broker.produce(name, [{"value": {"id": i}, "partition": i % 4} for i in range(40)])
    session = flowsql.connect()
    session.sql(f"CREATE TABLE t (id BIGINT) WITH ('connector' = 'kafka', 'topic' = '{name}', "
                f"'format' = 'json', 'properties.bootstrap.servers' = "
                f"'{kafka_broker.bootstrap}', 'scan.startup.mode' = 'earliest-offset')")
    # two subtasks read a little each, then snapshot
    first: list[int] = []
    states = []
    for subtask in (0, 1):
        scan = _scan(session, "t")
        scan.open(_context(subtask, 2))
        first += _read(scan, 2)
        states.append(scan.snapshot_state(1))
        scan.close()
    assert first and len(first) < 40
    # one subtask restores the union of both snapshots and reads the rest
    merged = {key: pa.concat_tables([s[key] for s in states]) for key in states[0]}
    scan = _scan(session, "t")
    scan.open(_context(0, 1))
    scan.restore_state(merged)
    rest: list[int] = []
    for _ in range(30):
        rest += _read(scan, 1)
        if len(first) + len(rest) >= 40:
            break
    scan.close()
    assert sorted(first + rest) == list(range(40))  # nothing lost, nothing twice


def test_a_restored_bounded_read_ends_where_it_would_have(kafka_broker: DevBroker) -> None:
    """The end of a 'latest-offset' bounded read is resolved once and checkpointed: records
    produced after the job started are not read after a restore either."""
    name = f"end{next(_names)}"
    kafka_broker.create_topic(name, 1)
    kafka_broker.produce(name, [{"value": {"id": i}} for i in range(6)], flush_each=True)
    session = flowsql.connect()
    session.sql(f"CREATE TABLE t (id BIGINT) WITH ('connector' = 'kafka', 'topic' = '{name}', "
                f"'format' = 'json', 'properties.bootstrap.servers' = "
                f"'{kafka_broker.bootstrap}', 'scan.startup.mode' = 'earliest-offset', "
                "'scan.bounded.mode' = 'latest-offset')")
    scan = _scan(session, "t")
    scan.open(_context(0, 1))
    first = _read(scan, 1)
    state = scan.snapshot_state(1)
    scan.close()
    kafka_broker.produce(name, [{"value": {"id": i}} for i in (6, 7)], flush_each=True)
    scan = _scan(session, "t")
    scan.open(_context(0, 1))
    scan.restore_state(state)
    rest: list[int] = []
    while (polled := scan.poll(1.0)) is not None:
        rest += [v for b in polled if isinstance(b, pa.RecordBatch)
                 for v in b.column(0).to_pylist()]
    scan.close()
    assert first == [0, 1, 2] and rest == [3, 4, 5]


def test_a_snapshot_before_the_first_poll_keeps_only_owned_partitions(
        kafka_broker: DevBroker) -> None:
    """Union state gives every subtask every old position; a checkpoint taken right after
    the restore, before the first poll, must not copy the other subtasks' partitions (a
    later restore would then see them twice)."""
    name = f"union{next(_names)}"
    kafka_broker.create_topic(name, 4)
    kafka_broker.produce(name, [{"value": {"id": i}, "partition": i % 4} for i in range(8)])
    session = flowsql.connect()
    session.sql(f"CREATE TABLE t (id BIGINT) WITH ('connector' = 'kafka', 'topic' = '{name}', "
                f"'format' = 'json', 'properties.bootstrap.servers' = "
                f"'{kafka_broker.bootstrap}', 'scan.startup.mode' = 'earliest-offset')")
    states = []
    for subtask in (0, 1):
        scan = _scan(session, "t")
        scan.open(_context(subtask, 2))
        _read(scan, 2)
        states.append(scan.snapshot_state(1))
        scan.close()
    union = {key: pa.concat_tables([s[key] for s in states]) for key in states[0]}
    assert union["list/partitions"].num_rows == 4
    owned = []
    for subtask in (0, 1):
        scan = _scan(session, "t")
        scan.open(_context(subtask, 2))
        scan.restore_state(union)
        owned.append(sorted(scan.snapshot_state(2)["list/partitions"]["partition"].to_pylist()))
        scan.close()
    assert sorted(owned[0] + owned[1]) == [0, 1, 2, 3] and all(owned)
