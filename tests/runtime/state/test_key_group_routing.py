"""Every keyed streaming operator files a key's state under the key group the exchange
routes that key's rows by.

Rescaling hands key group ``g`` (state, timers) to the subtask ``split_batch_by_subtask``
sends the rows of ``g`` to; if an operator computed another key group for a key than the
exchange does, a rescaled restore would put the key's state on one subtask and its rows on
another, and the state would be silently lost. So for each keyed operator kind and each
key (every engine key type, NULLs, floats with -0.0 and NaN, dictionary
and decimal keys, several columns, keys computed by an expression) this test

* places the exchange the streaming distribution pass places in front of the operator and
  routes the input through the real ``Partitioner`` with ``parallelism == max_parallelism``,
  so the receiving subtask of a row *is* its key group;
* feeds the same input through the real operator, snapshots it, and checks that every row
  of every keyed state table carries the key group its key was routed to, and that every
  timer belongs to a key group that received rows.
"""

from __future__ import annotations

import decimal
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from flowsql.optimizer.streaming.distribution import enforce_streaming_distribution
from flowsql.planner import types as T
from flowsql.planner.catalog import TableEntry
from flowsql.planner.expressions import AggCall, Cast, Expr, SortKey
from flowsql.planner.logical import WindowShape
from flowsql.planner.physical import (
    WINDOW_END,
    WINDOW_START,
    ExchangeExec,
    PhysicalPlan,
    TableScanExec,
    WindowAggregateExec,
)
from flowsql.planner.physical_streaming import (
    GroupAggregateExec,
    IntervalJoinExec,
    OverAggregateExec,
    RankExec,
    StreamJoinExec,
    WindowedAggregateExec,
    WindowJoinExec,
)
from flowsql.planner.schema import Field, Schema, to_arrow_schema
from flowsql.runtime.expressions import compile_expr
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.parallel.partitioner import Partitioner
from flowsql.runtime.partitioning import key_groups
from flowsql.runtime.registry import create_operator
from flowsql.runtime.state.keyed_table import KEY_GROUP
from tests.harness.operators import leaf

MAX_PARALLELISM = 16
ROWS = 72
TS = pa.timestamp("ms")

# -- the input: one column per key type, drawn from small pools so keys repeat ----------------

_STRINGS = ["", "a", "ab", "a string longer than eight bytes", "\u00e9t\u00e9", None]
_POOLS: dict[str, tuple[pa.DataType, list[Any]]] = {
    "i8": (pa.int8(), [-3, 0, 7, 127, None]),
    "i16": (pa.int16(), [-300, 0, 7, None]),
    "i32": (pa.int32(), [-(2**31), 0, 7, 2**31 - 1, None]),
    "i64": (pa.int64(), [-(2**63), 0, 7, 2**63 - 1, None]),
    "bool": (pa.bool_(), [True, False, None]),
    "f32": (pa.float32(), [-0.0, 0.0, 1.5, math.nan, math.inf, None]),
    "f64": (pa.float64(), [-0.0, 0.0, 1.5, math.nan, -math.inf, 1e300, None]),
    "dec": (pa.decimal128(10, 2), [decimal.Decimal("1.50"), decimal.Decimal("-0.01"),
                                   decimal.Decimal("0.00"), None]),
    "dec38": (pa.decimal128(38, 10), [decimal.Decimal("12345678901234567890.0123456789"),
                                      decimal.Decimal("-1.5"), None]),
    "str": (pa.string(), _STRINGS),
    "bin": (pa.binary(), [b"", b"\x00", b"xyz", b"0123456789abcdef0", None]),
    "date": (pa.date32(), [date(1970, 1, 1), date(1969, 12, 31), date(2024, 2, 29), None]),
    "ts_ms": (TS, [0, -1, 1_700_000_000_123, None]),
    "ts_us": (pa.timestamp("us"), [0, -1_000_001, 1_700_000_000_123_456, None]),
    "ts_tz": (pa.timestamp("us", "UTC"), [0, 1_700_000_000_123_456, None]),
    "time": (pa.time64("us"), [0, 1_000_001, 86_399_999_999, None]),
    "null": (pa.null(), [None]),
}


def _column(name: str, rng: random.Random) -> pa.Array:
    dtype, pool = _POOLS[name]
    return pa.array([rng.choice(pool) for _ in range(ROWS)], dtype)


def _table(seed: int) -> pa.Table:
    """Key columns, rowtime ``ts`` (0.7 s apart, a little out of order), a value ``v`` and a
    10-second tumbling window ``ws``/``we`` of ``ts``."""
    rng = random.Random(seed)
    ts = np.array([700 * i - rng.randrange(0, 1_500) for i in range(ROWS)], np.int64)
    ts = np.maximum(ts, 0)
    start = ts - ts % 10_000
    columns = {name: _column(name, rng) for name in _POOLS}
    columns.update({"ts": pa.array(ts, TS), "v": pa.array([rng.randrange(50)
                                                           for _ in range(ROWS)], pa.int64()),
                    "ws": pa.array(start, TS), "we": pa.array(start + 10_000, TS)})
    return pa.table(columns)


# -- representations: what the engine casts must not move a key ----------------------------

_STORAGE_FORMS = {
    "large_string": pa.array(_STRINGS, pa.large_string()),
    "string_view": pa.array(_STRINGS, pa.string_view()),
    "dictionary": pa.array(_STRINGS, pa.string()).dictionary_encode(),
    "large_binary": pa.array([None if v is None else v.encode() for v in _STRINGS],
                             pa.large_binary()),
    "binary_view": pa.array([None if v is None else v.encode() for v in _STRINGS],
                            pa.binary_view()),
    "timestamp_ns": pa.array([0, 1_000_000_123, -2_000_000_999, 1_700_000_000_123_456_789,
                              None], pa.timestamp("ns")),
}


@pytest.mark.parametrize("name", sorted(_STORAGE_FORMS))
def test_a_key_column_lands_in_the_key_group_of_its_engine_storage_form(name: str) -> None:
    """A scan hands the engine normalized columns, and operators cast keys to the engine's
    types (a join to the common key type): that cast must keep every key's key group."""
    column = _STORAGE_FORMS[name]
    normalized = pc.cast(column, T.normalize_storage_type(column.type), safe=False)
    assert not normalized.type.equals(column.type)
    assert (key_groups([column], MAX_PARALLELISM).tolist()
            == key_groups([normalized], MAX_PARALLELISM).tolist())


# -- keys: which columns (or expressions over them) an operator is keyed by -----------------

KeyMaker = Callable[[dict[str, Field]], tuple[Expr, ...]]


def _columns(*names: str) -> KeyMaker:
    return lambda fields: tuple(fields[n].ref() for n in names)


def _cast(name: str, dtype: pa.DataType) -> KeyMaker:
    return lambda fields: (Cast(fields[name].ref(), dtype),)


KEYS: dict[str, KeyMaker] = {
    **{name: _columns(name) for name in _POOLS},
    "str+i32+null": _columns("str", "i32", "null"),
    "str+ts_us+dec": _columns("str", "ts_us", "dec"),
    "f64+bool+date": _columns("f64", "bool", "date"),
    "cast(i32 as bigint)": _cast("i32", pa.int64()),
    "cast(dec as decimal(20,4))": _cast("dec", pa.decimal128(20, 4)),
    "cast(ts_ms as timestamp(6))": _cast("ts_ms", pa.timestamp("us")),
    "cast(f32 as double)": _cast("f32", pa.float64()),
    "cast(i8 as string)": _cast("i8", pa.string()),
}
FAST_KEYS = ["str", "f64", "dec", "null", "str+i32+null", "cast(dec as decimal(20,4))"]


# -- operators --------------------------------------------------------------------------------

@dataclass
class Case:
    """A keyed node over one or two leaves and the batches of each leaf."""

    node: PhysicalPlan
    inputs: list[list[pa.RecordBatch]]


def _leaf(table: pa.Table) -> tuple[PhysicalPlan, dict[str, Field], list[pa.RecordBatch]]:
    node, batches = leaf(table, chunk=6)
    return node, {f.name: f for f in node.schema}, batches


def _aggs(fields: dict[str, Field]) -> tuple[tuple[AggCall, ...], Schema]:
    calls = (AggCall("count_star", (), T.INT64), AggCall("sum", (fields["v"].ref(),), T.INT64))
    return calls, tuple(Field.fresh(f"a{i}", c.dtype) for i, c in enumerate(calls))


def _group_fields(keys: tuple[Expr, ...]) -> Schema:
    return tuple(Field.fresh(f"g{i}", k.dtype) for i, k in enumerate(keys))


def _group_aggregate(table: pa.Table, keys: KeyMaker) -> Case:
    child, fields, batches = _leaf(table)
    k = keys(fields)
    v = fields["v"].ref()
    calls = (AggCall("count_star", (), T.INT64), AggCall("sum", (v,), T.INT64),
             AggCall("max", (v,), T.INT64), AggCall("count", (v,), T.INT64, True))
    agg_fields = tuple(Field.fresh(f"a{i}", c.dtype) for i, c in enumerate(calls))
    return Case(GroupAggregateExec(child, k, _group_fields(k), calls, agg_fields, 1.0),
                [batches])


def _window_aggregate(shape: WindowShape) -> Callable[[pa.Table, KeyMaker], Case]:
    def case(table: pa.Table, keys: KeyMaker) -> Case:
        child, fields, batches = _leaf(table)
        k = keys(fields)
        calls, agg_fields = _aggs(fields)
        slots: tuple[int | str, ...] = (*range(len(k)), WINDOW_START, WINDOW_END)
        group_fields = (*_group_fields(k), Field.fresh("window_start", TS),
                        Field.fresh("window_end", TS))
        return Case(WindowAggregateExec(child, shape, fields["ts"].ref(), k, slots,
                                        group_fields, calls, agg_fields, 1.0), [batches])
    return case


def _windowed_aggregate(table: pa.Table, keys: KeyMaker) -> Case:
    child, fields, batches = _leaf(table)
    k = (*keys(fields), fields["ws"].ref(), fields["we"].ref())
    calls, agg_fields = _aggs(fields)
    return Case(WindowedAggregateExec(child, k, _group_fields(k), calls, agg_fields,
                                      (fields["ws"].ref(), fields["we"].ref()), 1.0), [batches])


def _over(frame: str, preceding: int | None) -> Callable[[pa.Table, KeyMaker], Case]:
    def case(table: pa.Table, keys: KeyMaker) -> Case:
        child, fields, batches = _leaf(table)
        calls, agg_fields = _aggs(fields)
        return Case(OverAggregateExec(child, keys(fields), fields["ts"].ref(), frame,
                                      preceding, calls, agg_fields, 1.0), [batches])
    return case


def _rank(kind: str) -> Callable[[pa.Table, KeyMaker], Case]:
    def case(table: pa.Table, keys: KeyMaker) -> Case:
        child, fields, batches = _leaf(table)
        window = None
        if kind == "top_n":
            order, lower, upper, time = (SortKey(fields["v"].ref(), False),), 1, 2, None
        elif kind == "deduplicate":
            order, lower, upper, time = (SortKey(fields["ts"].ref(), True),), 1, 1, "rowtime"
        else:
            order, lower, upper, time = (SortKey(fields["v"].ref(), False),), 1, 2, None
            window = (fields["ws"].ref(), fields["we"].ref())
        return Case(RankExec(child, keys(fields), order, lower, upper,
                             Field.fresh("rn", pa.int64()), time, window, 1.0), [batches])
    return case


def _join(kind: str) -> Callable[[pa.Table, KeyMaker], Case]:
    def case(table: pa.Table, keys: KeyMaker) -> Case:
        # the right side holds the same keys in another order, so keys meet across sides
        left, lf, lb = _leaf(table)
        right, rf, rb = _leaf(table.take(pa.array(np.arange(ROWS)[::-1].copy())))
        lk, rk = keys(lf), keys(rf)
        if kind == "regular":
            node: PhysicalPlan = StreamJoinExec(left, right, "inner", lk, rk, None, False, 1.0)
        elif kind == "interval":
            node = IntervalJoinExec(left, right, "inner", lk, rk, lf["ts"].ref(), rf["ts"].ref(),
                                    -2_000, 3_000, None, 1.0)
        else:
            lw, rw = (lf["ws"].ref(), lf["we"].ref()), (rf["ws"].ref(), rf["we"].ref())
            node = WindowJoinExec(left, right, "inner", (*lk, *lw), (*rk, *rw), lw, rw, None,
                                  1.0)
        return Case(node, [lb, rb])
    return case


OPERATORS: dict[str, Callable[[pa.Table, KeyMaker], Case]] = {
    "group_aggregate": _group_aggregate,
    "tumble": _window_aggregate(WindowShape("tumble", size=10_000)),
    "hop": _window_aggregate(WindowShape("hop", size=10_000, slide=5_000)),
    "cumulate": _window_aggregate(WindowShape("cumulate", size=10_000, step=5_000)),
    "session": _window_aggregate(WindowShape("session", gap=3_000)),
    "windowed_aggregate": _windowed_aggregate,
    "over_rows_unbounded": _over("rows", None),
    "over_range_bounded": _over("range", 2_000),
    "top_n": _rank("top_n"),
    "deduplicate": _rank("deduplicate"),
    "window_rank": _rank("window_rank"),
    "regular_join": _join("regular"),
    "interval_join": _join("interval"),
    "window_join": _join("window"),
}


# -- what the exchange does -------------------------------------------------------------------

class _Receiver:
    """One receiving subtask's channel: keeps what it is sent."""

    def __init__(self) -> None:
        self.batches: list[pa.RecordBatch] = []

    def write(self, batch: pa.RecordBatch) -> None:
        self.batches.append(batch)


def _exchanges(node: PhysicalPlan) -> list[ExchangeExec]:
    """The hash exchanges the streaming distribution pass puts in front of ``node``."""
    # the leaves as scans: a scan runs on every subtask, a leaf of values on one only
    scans = tuple(TableScanExec(TableEntry("t", to_arrow_schema(child.schema), {}),
                                child.schema, (), 1.0) for child in node.inputs)
    placed = enforce_streaming_distribution(node.with_inputs(scans),
                                            {"parallelism.default": "2"})
    while type(placed) is not type(node):
        placed = placed.inputs[0]
    exchanges = list(placed.inputs)
    for exchange in exchanges:
        assert isinstance(exchange, ExchangeExec) and exchange.kind == "hash", exchange
    return exchanges  # type: ignore[return-value]


def _canonical(column: pa.Array | pa.ChunkedArray) -> list[Any]:
    """Python values that compare (and hash) equal exactly when the SQL values are equal,
    whatever representation the operator stored them in."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if pa.types.is_dictionary(column.type):
        column = column.dictionary_decode()
    if pa.types.is_timestamp(column.type):
        # in microseconds: the pool's nanosecond values are distinct there too
        column = pc.cast(pc.cast(column, pa.timestamp("us", column.type.tz), safe=False),
                         pa.int64())
    elif pa.types.is_time(column.type):
        column = pc.cast(column, pa.int64())
    values = column.to_pylist()
    out = []
    for value in values:
        if isinstance(value, float):
            value = "NaN" if math.isnan(value) else value + 0.0
        elif isinstance(value, decimal.Decimal):
            value = value.normalize()
        elif isinstance(value, str):
            value = value.encode()
        out.append(value)
    return out


def _keys_of(batch: pa.RecordBatch, fns: Sequence[Callable[[pa.RecordBatch], pa.Array]]
             ) -> list[tuple[Any, ...]]:
    return list(zip(*(_canonical(fn(batch)) for fn in fns)))


def _routing(case: Case, exchanges: list[ExchangeExec]) -> tuple[dict[tuple[Any, ...], int],
                                                                  list[pa.DataType]]:
    """Key (canonical values) -> key group the exchange sends its rows to, and the key
    types; on a join, equal keys of the two sides must go to one key group."""
    routed: dict[tuple[Any, ...], int] = {}
    for exchange, batches in zip(exchanges, case.inputs):
        receivers = [_Receiver() for _ in range(MAX_PARALLELISM)]
        partitioner = Partitioner("hash", exchange.keys, exchange.input.schema,
                                  receivers, 0, MAX_PARALLELISM)  # type: ignore[arg-type]
        for batch in batches:
            partitioner.write(batch)
        fns = [compile_expr(k, exchange.input.schema) for k in exchange.keys]
        for group, receiver in enumerate(receivers):
            for batch in receiver.batches:
                for key in _keys_of(batch, fns):
                    assert routed.setdefault(key, group) == group, (
                        f"the exchange sends key {key} to key groups {routed[key]} and {group}")
    return routed, [k.dtype for k in exchanges[0].keys]


# -- what the operator stores -----------------------------------------------------------------

def _run(case: Case) -> dict[str, pa.Table]:
    """Feed every input, watermarks half-way (some windows fire, some state stays),
    and snapshot before the end of the input."""
    operator = create_operator(case.node)
    operator.open(OperatorContext("test", {"pipeline.max-parallelism": str(MAX_PARALLELISM),
                                           "execution.batch-size": "8"}))
    steps = max(len(batches) for batches in case.inputs)
    for step in range(steps):
        for index, batches in enumerate(case.inputs):
            if step < len(batches):
                list(operator.process_batch(index, batches[step]))
        if step == steps // 2:
            list(operator.process_watermark(700 * ROWS // 2 - 5_000))
    return operator.snapshot_state(1)


def _stored_keys(name: str, table: pa.Table, case: Case, count: int
                 ) -> list[pa.ChunkedArray] | None:
    """The key columns of a keyed state table (None: a table without keys of its own)."""
    stored = [f"k{i}" for i in range(count)]
    if all(n in table.column_names for n in stored):
        return [table.column(n) for n in stored]
    if isinstance(case.node, RankExec):  # ranking state holds the input rows, c0, c1, ...
        schema = case.node.input.schema
        data = pa.RecordBatch.from_arrays(
            [table.column(f"c{i}").combine_chunks() for i in range(len(schema))],
            names=[f.name for f in schema])
        return [compile_expr(k, schema)(data) for k in case.node.partition_keys]
    raise AssertionError(f"state {name}: cannot find the key columns in {table.schema}")


def _check(operator: str, key: str, seed: int = 0) -> None:
    table = _table(seed)
    joins_null_keys = operator.endswith("join") and "null" in key
    if operator == "regular_join" and not joins_null_keys:
        # a data column of type NULL trips the regular join's row identity (a limit of its
        # own, not of key groups); a NULL key is never stored by an inner join anyway
        table = table.drop_columns(["null"])
    case = OPERATORS[operator](table, KEYS[key])
    exchanges = _exchanges(case.node)
    routed, key_types = _routing(case, exchanges)
    count = len(key_types)
    checked = 0
    for name, table in _run(case).items():
        groups = table.column(KEY_GROUP).to_pylist() if KEY_GROUP in table.column_names else []
        if name.startswith("timers/"):
            assert set(groups) <= set(routed.values()), (
                f"{name}: timers in key groups {sorted(set(groups) - set(routed.values()))} "
                "that received no rows")
            continue
        if not name.startswith("keyed/") or not table.num_rows:
            continue
        columns = _stored_keys(name, table, case, count)
        assert columns is not None
        keys = list(zip(*(_canonical(c) for c in columns)))
        for stored_key, group in zip(keys, groups):
            assert stored_key in routed, f"{name}: key {stored_key} never went through the exchange"
            assert group == routed[stored_key], (
                f"{operator} keyed by {key}: state {name} files key {stored_key} under key "
                f"group {group}, the exchange routes it to key group {routed[stored_key]}")
            checked += 1
    # an inner join stores no row with a NULL key: those keys only test the exchange
    assert checked or joins_null_keys, f"{operator} keyed by {key}: no keyed state to check"


#: a session window cannot be keyed by a column of type NULL (its session merging compares
#: keys with ``equal``, which has no kernel for it): an operator limit, not a routing one
_UNSUPPORTED = {("session", key) for key in KEYS if "null" in key}


def _matrix(keys: list[str]) -> list[tuple[str, str]]:
    return [(operator, key) for operator in sorted(OPERATORS) for key in keys
            if (operator, key) not in _UNSUPPORTED]


@pytest.mark.parametrize(("operator", "key"), _matrix(FAST_KEYS))
def test_state_key_group_is_the_exchange_key_group(operator: str, key: str) -> None:
    _check(operator, key)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(("operator", "key"), _matrix(sorted(set(KEYS) - set(FAST_KEYS))))
def test_state_key_group_is_the_exchange_key_group_for_every_key_type(
        operator: str, key: str, seed: int) -> None:
    _check(operator, key, seed)
